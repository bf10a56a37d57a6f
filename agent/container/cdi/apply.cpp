// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/apply.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace trellis::agent::cdi {

void check_host_device_node(const BindMount& node) {
    std::string numbers = node.major >= 0 && node.minor >= 0
                              ? " (" + std::to_string(node.major) + ":" + std::to_string(node.minor) + ")"
                              : "";
    struct stat st;
    if (stat(node.host_path.c_str(), &st) != 0)
        throw Refused(node.origin + ": CDI device node " + node.container_path + numbers + " is not on the host at " +
                      node.host_path + " (" + std::strerror(errno) +
                      "): trellis binds device nodes from the host and cannot create one from its major/minor "
                      "numbers, since mknod is not allowed in a user namespace");
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
        throw Refused(node.origin + ": CDI device node " + node.container_path + ": " + node.host_path +
                      " on the host is not a device node");
    const char* host_type = S_ISBLK(st.st_mode) ? "b" : "c";
    if (!node.type.empty() && node.type != host_type)
        throw Refused(node.origin + ": CDI device node " + node.container_path + " has type " + node.type + " but " +
                      node.host_path + " on the host has type " + host_type);
    if ((node.major >= 0 && node.major != static_cast<std::int64_t>(major(st.st_rdev))) ||
        (node.minor >= 0 && node.minor != static_cast<std::int64_t>(minor(st.st_rdev))))
        throw Refused(node.origin + ": CDI device node " + node.container_path + numbers + ": " + node.host_path +
                      " on the host is " + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)));
}

void apply_edits(const ResolvedEdits& edits, RootEditor& root) {
    for (const auto& node : edits.device_nodes) {
        check_host_device_node(node);
        root.bind(node);
    }
    for (const auto& mount : edits.mounts) root.bind(mount);
    for (const auto& link : edits.symlinks) root.symlink(link);
    if (!edits.ld_folders.empty()) {
        std::string conf = "# Written by trellis from the CDI update-ldcache hook of " + edits.devices.front() + "\n";
        for (const auto& folder : edits.ld_folders) conf += folder + "\n";
        root.write_file(ld_conf_file, conf);
        root.build_ld_cache(edits.ld_folders);
    }
}

}  // namespace trellis::agent::cdi
