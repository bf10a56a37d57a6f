// SPDX-License-Identifier: Apache-2.0
// Putting ResolvedEdits into a container's root, through a small interface that the container
// code implements (RootEditor; agent/container/rootfs.hpp has the one over the root made). The
// root must be writable where edits land (a tmpfs or the overlay's writable layer) and is
// made read-only afterwards by the caller. Environment entries are not applied here: the
// caller appends ResolvedEdits::env after the image's environment.
#pragma once

#include <string>
#include <vector>

#include "agent/container/cdi/resolved_edits.hpp"

namespace trellis::agent::cdi {

// The file update-ldcache writes, so that ldconfig run later in the container keeps the
// folders; it stands in for /etc/ld.so.conf when the image has none.
inline constexpr const char* ld_conf_file = "/etc/ld.so.conf.d/00-trellis-cdi.conf";

class RootEditor {
public:
    virtual ~RootEditor() = default;
    // Binds the host's `mount.host_path` at `mount.container_path`, with its flags, making
    // an empty file or folder there first when the image has none.
    virtual void bind(const BindMount& mount) = 0;
    // Makes the symbolic link (replacing a link already there).
    virtual void symlink(const Symlink& link) = 0;
    // Writes a small file (its folders made as needed).
    virtual void write_file(const std::string& container_path, const std::string& content) = 0;
    // Builds the container's /etc/ld.so.cache over the libraries in `folders` (and the
    // image's own /etc/ld.so.conf, else ld_conf_file).
    virtual void build_ld_cache(const std::vector<std::string>& folders) = 0;
};

// Refuses a device node that the host lacks, that is not a device, or whose numbers differ
// from what its spec says: trellis can only bind nodes, never make them (mknod is not allowed
// in a user namespace).
void check_host_device_node(const BindMount& node);

// Device nodes, then mounts, then symbolic links, then the ld.so.cache (built last, so that
// it sees the links). Throws Refused or Error naming the path.
void apply_edits(const ResolvedEdits& edits, RootEditor& root);

}  // namespace trellis::agent::cdi
