// SPDX-License-Identifier: Apache-2.0
// An OCI bundle's container, made by the calling process for itself, as the job's user: a
// user namespace mapping the user's own uid and gid (nothing else: no root inside, and no
// privilege on the host), a mount namespace whose root is the image's rootfs, read-only,
// nosuid and nodev, with the container's own /dev, /tmp and /var/tmp, the host's /proc and
// /sys (read-only), the step's device files, the user's mounts and PMIx's folders. Every
// mount is made with the user's own rights, so the kernel refuses whatever the user could
// not reach, and nothing is ever written into the image: a mount point the image lacks is
// refused, or made in a tmpfs of the container's (a squashfs image's overlay is such a tmpfs).
#pragma once

#include <sys/types.h>

#include <vector>

#include "agent/container/container_spec.hpp"

namespace trellis::agent {

// Also a squashfs image: mounted through squashfuse under an overlay (squashfs_root.hpp).
// Returns the FUSE daemons that serve the root, which must run as long as the container is
// used (stop them with stop_fuse_daemons); none for a bundle. Throws ContainerError naming
// what could not be made; the process is then half inside and should exit.
std::vector<pid_t> enter_oci_container(const ContainerSpec& spec);

}  // namespace trellis::agent
