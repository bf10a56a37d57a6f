// One step's container on one node, as the agent starts it: the image, what is mounted
// into it, and whose processes run there.
#pragma once

#include <string>
#include <vector>

#include "agent/command.hpp"
#include "agent/container/mount_spec.hpp"

namespace trellis::agent {

struct ContainerSpec {
    std::string id;                       // trellis-<node>-<job>.<step>: unique on the machine
    std::string image;                    // checked and canonical (image_policy)
    std::vector<Mount> mounts;            // the user's (checked) and the system's (PMIx)
    std::vector<std::string> devices;     // device files bound in at the same path
    std::vector<std::string> namespaces;  // what tasks join: mount, ipc, uts
    Identity user;                        // who runs inside: the job's user
    std::string pause_program;            // the container's idle first process (trellis-pause)
};

}  // namespace trellis::agent
