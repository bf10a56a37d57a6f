// SPDX-License-Identifier: Apache-2.0
// The making of a container's root: every mount trellis makes is made here. The root is made
// by the job's user, in a user and mount namespace of its own, under a folder that then
// becomes "/"; paths in it are resolved inside it (openat2 RESOLVE_IN_ROOT), so that an
// image's link (/usr/lib64 -> lib, or an absolute one) leads where it would in the container
// and never out of it. Rootfs is also the editor CDI's edits are applied through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/container/cdi/apply.hpp"
#include "agent/files.hpp"

namespace trellis::agent {

class Rootfs : public cdi::RootEditor {
public:
    // `layered`: the root is writable and the user's (an overlay's upper layer, a tmpfs), so
    // mount points it lacks are made there and never in the image. `overlay`: the root is at
    // least the kernel's overlay over a squashfs, whose top folder is the user's: a folder the
    // image lacks at its top can be made there. Binds `path` over itself.
    Rootfs(const std::string& path, bool layered, bool overlay);

    // A file system of the container's own at `destination`, which the image must have unless
    // the root is layered.
    void mount_fs(const std::string& destination, const char* type, unsigned long flags, const std::string& options);
    // The same on a folder made for it in one of the container's own file systems.
    void mount_fs_new(const std::string& destination, const char* type, unsigned long flags,
                      const std::string& options);
    // `source` (a host path) at `destination`, recursively; `attributes` (MOUNT_ATTR_*) hold
    // for submounts too. With `cover_missing_parent`, a path the image lacks is made in a
    // tmpfs over its deepest folder the image has (that folder's entries bound back in).
    void bind(const std::string& source, const std::string& destination, std::uint64_t attributes,
              bool cover_missing_parent = false);
    // An empty file or folder (and the folders above it) where the root may be written,
    // component by component, never through a link.
    Fd create(const std::string& destination, bool directory);
    // `path` in the root, as the container will see it; an empty Fd when it is not there.
    Fd open(const std::string& path, int flags = 0) const;
    // A link `name` -> `target` in the folder `folder` of the root; one already there is kept.
    void link(const std::string& folder, const char* name, const char* target);
    // Ends the making: the root becomes "/", nosuid and nodev, and read-only unless `writable`.
    void become_root(bool writable);

    bool layered() const { return layered_; }

    // cdi::RootEditor: CDI's binds (the flags a bind from outside the user namespace keeps
    // are kept), links (replacing a link there), small files, and the ld.so.cache.
    void bind(const cdi::BindMount& mount) override;
    void symlink(const cdi::Symlink& link) override;
    void write_file(const std::string& container_path, const std::string& content) override;
    void build_ld_cache(const std::vector<std::string>& folders) override;

private:
    // CDI's: the folder that holds `path` (absolute, no ".."), its folders made as needed,
    // each reached through the root as the container resolves it (an image's /lib64 -> lib
    // leads inside the root); `name` gets the last component.
    Fd parent_in_root(const std::string& path, std::string& name);
    Fd existing(const std::string& destination, bool directory);
    bool in_scratch(const std::string& destination) const;
    Fd mount_point(const std::string& destination, bool directory, bool cover_missing_parent);
    void cover(const std::string& folder);

    std::string path_;
    bool layered_;
    bool overlay_;
    Fd root_;
    std::vector<std::string> scratch_;  // the container's own tmpfs folders
};

// The container's /dev: a tmpfs with the standard device files and the step's `nodes`, bound
// from the host (a user namespace may not make device files; each is checked against the
// host's first), its own /dev/pts and /dev/shm.
void make_dev(Rootfs& rootfs, const std::vector<cdi::BindMount>& nodes);

// Mounts outside a Rootfs, in the caller's own mount namespace. Each throws ContainerError
// naming `what` and the kernel's reason.
void make_mounts_private();
void mount_tmpfs(const std::string& at, const std::string& options, const std::string& what);
void mount_overlay(const std::string& at, const std::string& options, const std::string& what);
// `source` (a descriptor's magic link or a path) at `at`, read-only, nosuid, nodev.
void bind_read_only(const std::string& source, const std::string& at, const std::string& what);
// A FUSE file system of type fuse.`type` at `target` on a descriptor opened here (the kernel
// takes one only from the user namespace that mounts it), which is returned, without
// close-on-exec, for its daemon.
int mount_fuse(const std::string& source, const std::string& target, const std::string& type, bool read_only);

// In a helper's child (no exceptions there: false with errno set). Every mount read-only,
// then each of `writable` bound over itself and writable again; the caller is in a mount
// namespace of its own.
bool mount_read_only_but(const std::vector<std::string>& writable);
// A fresh /proc, for the first process of a PID namespace.
bool mount_own_proc();

}  // namespace trellis::agent
