// A squashfs image as a container's root, made inside the container's own user and mount
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

struct SquashfsRoot {
    std::string root;                // the overlay, to become the container's root
    std::vector<pid_t> fuse_daemons; // serve the mounts: stop them with the container
};

// Call in fresh user and mount namespaces (CAP_SYS_ADMIN there). The image's folder is
// covered, in this mount namespace only, by a tmpfs that holds the layers. With `writable`
// the root is fuse-overlayfs's, showing the image's files as the user's so that every path
// can be written (into the tmpfs); without, the kernel's overlay, which the caller makes
// read-only. Throws ContainerError naming what failed; daemons already started are stopped.
SquashfsRoot mount_squashfs_root(const std::string& image, bool writable,
                                 const std::vector<std::string>& mount_sources);

// SIGKILL to each daemon, then reaps it.
void stop_fuse_daemons(const std::vector<pid_t>& daemons);

}  // namespace trellis::agent
