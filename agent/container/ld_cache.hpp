// SPDX-License-Identifier: Apache-2.0
// The container's /etc/ld.so.cache, built by the host's ldconfig as update-ldcache asks, so
// that the driver libraries bound in are found by soname.
//
// `ldconfig -r ROOT` would chroot after exec, which a task that is not root in its user
// namespace cannot; and `-C ROOT/etc/ld.so.cache` from outside would record host paths
// (ROOT/usr/lib/...). So a child chroots into ROOT first, with the capability the creator of
// the container's user namespace still holds, and then executes the host's ldconfig through a
// descriptor opened before the chroot: a static binary (Debian's is static-pie) runs without
// anything from the image. The image's own /etc/ld.so.conf is honoured when it has one.
#pragma once

#include <string>
#include <vector>

namespace trellis::agent {

// root: the container's root in the caller's mount namespace, writable at /etc. folders:
// absolute paths in the container. `conf` (a path in the container) stands in for
// /etc/ld.so.conf when the image has none. Throws Error with ldconfig's status and output
// when it fails.
void build_ld_cache(const std::string& root, const std::vector<std::string>& folders, const std::string& conf,
                    const std::string& ldconfig = "/sbin/ldconfig");

}  // namespace trellis::agent
