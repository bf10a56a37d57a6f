// SPDX-License-Identifier: Apache-2.0
// A squashfs image as a container's root (and an OCI bundle's writable layer), made inside the container's own user and mount
// namespaces by the job's user: squashfuse serves the image through a FUSE descriptor this
// process opened and mounted itself (fusermount3 refuses a user namespace that maps only the
// user's own uid), and an overlay with its upper layer on a tmpfs goes over it, so that mount
// points can be made without touching the image. The image file is only ever read.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "agent/container/container_spec.hpp"

namespace trellis::agent {

struct FusePrograms {
    std::string squashfuse, fuse_overlayfs;  // absolute paths ([container] squashfuse, fuse_overlayfs)
};

struct SquashfsRoot {
    std::string root;                 // the overlay, to become the container's root
    std::vector<pid_t> fuse_daemons;  // serve the mounts: stop them with the container
};

// Call in fresh user and mount namespaces (CAP_SYS_ADMIN there). squashfuse reads `opened`
// (the descriptor the check opened) when it is not -1, else `image`. The image's folder is
// covered, in this mount namespace only, by a tmpfs that holds the layers. With `user_owned`
// the root is fuse-overlayfs's, showing the image's files as the user's so that every path
// can be written (into the tmpfs); without, the kernel's overlay (its folders are root's,
// nobody here: only the mount points the image has can be used). The caller makes the root
// read-only unless the user asked for it writable. Throws ContainerError naming what failed;
// daemons already started are stopped.
SquashfsRoot mount_squashfs_root(const std::string& image, int opened, bool user_owned,
                                 const std::vector<std::string>& mount_sources, const FusePrograms& programs);

// The same user-owned layer over an OCI bundle's rootfs (the bundle's folder is covered).
SquashfsRoot mount_bundle_layers(const std::string& bundle, const std::vector<std::string>& mount_sources,
                                 const FusePrograms& programs);

// SIGKILL to each daemon, then reaps it.
void stop_fuse_daemons(const std::vector<pid_t>& daemons);

}  // namespace trellis::agent
