// SPDX-License-Identifier: Apache-2.0
// What the selected CDI devices ask of a container, resolved into things a user-namespace
// container can do: bind host device nodes and files, make symbolic links, build an
// ld.so.cache, add environment variables. Hooks are not run as programs: the ones trellis
// knows are turned into these edits (hooks.hpp), the rest are refused or noted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trellis::agent::cdi {

struct BindMount {
    std::string host_path;       // absolute, on the host
    std::string container_path;  // absolute, in the container
    bool read_only = false, nosuid = false, nodev = false, noexec = false;
    bool recursive = false;  // rbind
    bool device = false;     // a device node: never nodev
    // Device nodes: what the spec says the host's node is (-1, "": not said), checked when
    // it is bound (apply.hpp), and the spec it came from, for messages.
    std::int64_t major = -1, minor = -1;
    std::string type;
    std::string origin;
};

struct Symlink {
    std::string target;  // as written into the link (relative or absolute)
    std::string link;    // absolute path in the container
};

struct ResolvedEdits {
    std::vector<std::string> devices;  // the qualified names applied ("nvidia.com/gpu=0")
    // "NAME=VALUE", to append after the image's environment (one entry per name, the last
    // definition winning).
    std::vector<std::string> env;
    std::vector<BindMount> device_nodes;  // bound from the host: no mknod in a user namespace
    std::vector<BindMount> mounts;        // parents before children
    std::vector<Symlink> symlinks;        // create-symlinks
    std::vector<std::string> ld_folders;  // update-ldcache: folders for the container's ld.so.cache
    // What was knowingly left out (hooks trellis skips, additionalGids), one line each, for
    // the verbose report.
    std::vector<std::string> notes;
};

}  // namespace trellis::agent::cdi
