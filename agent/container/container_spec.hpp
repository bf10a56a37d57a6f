// SPDX-License-Identifier: Apache-2.0
// One step's container on one node, as the job's user makes it: the image, what is mounted
// into it, and which namespaces the tasks join.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/container/cdi/resolved_edits.hpp"
#include "agent/image/policy.hpp"
#include "agent/container/mount_spec.hpp"
#include "common/error.hpp"

namespace trellis::agent {

// The container could not be made or joined: the message says what, and why.
struct ContainerError : Error {
    using Error::Error;
    const char* topic() const override { return "container"; }
};

struct ContainerSpec {
    CheckedImage image;                // checked and canonical (image_policy)
    std::vector<Mount> mounts;         // the user's, checked
    std::vector<Mount> system_mounts;  // PMIx's folders, at their host paths
    // Every device node the container gets, from one list: the plan's GPU and HCA files
    // (devices.hpp) and the CDI specs' nodes (which win for the same path), bound by the
    // container's one applier (Rootfs::bind).
    std::vector<cdi::BindMount> device_nodes;
    std::vector<std::string> namespaces;     // what tasks join besides the user's: mount, ipc, uts
    std::string apptainer;                   // the program that opens .sif images (absolute)
    std::string squashfuse, fuse_overlayfs;  // the programs that serve squashfs images (absolute)
    std::string pause_program;               // the process a .sif container is entered through
    bool writable = false;                   // --trellis-writable: a throw-away writable root
    // The root takes edits while it is made (CDI's links and ld.so.cache): it gets the same
    // user-owned layer as a writable one, made read-only afterwards unless `writable`.
    bool root_edits = false;
    // The step's GPUs as CDI's specs have them (driver libraries, device nodes, links, the
    // library cache), applied to the root while it is made; none without GPUs or specs.
    std::optional<cdi::ResolvedEdits> cdi;
    std::vector<std::string> notes;  // for the step's first task to print (CDI's warning and notes)
};

}  // namespace trellis::agent
