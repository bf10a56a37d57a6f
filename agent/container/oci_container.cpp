// SPDX-License-Identifier: Apache-2.0
#include "agent/container/oci_container.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/container/cdi/apply.hpp"
#include "agent/container/namespaces.hpp"
#include "agent/container/rootfs.hpp"
#include "agent/container/squashfs_root.hpp"

namespace trellis::agent {

namespace {

[[noreturn]] void fail(const std::string& what) { throw ContainerError(what + ": " + std::strerror(errno)); }

bool is_directory(const Fd& fd) {
    struct stat info {};
    return ::fstat(fd.get(), &info) == 0 && S_ISDIR(info.st_mode);
}

// The container's mounts under `path` (the bundle's rootfs, or a squashfs image's overlay),
// which then becomes the root. `layered`: a writable overlay whose files are the user's, where
// missing mount points are made (the read-only overlay's are root's, who is nobody here).
// `overlay`: `path` is an overlay over a squashfs or bundle, even a read-only one.
void make_root(const ContainerSpec& spec, const std::string& path, bool layered, bool overlay) {
    Rootfs rootfs(path, layered, overlay);
    // The host's process table (the container shares its PIDs) and topology (NCCL and hwloc
    // read /sys; read-only all the way down).
    rootfs.bind("/proc", "/proc", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    rootfs.bind("/sys", "/sys", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    make_dev(rootfs, spec.device_nodes);
    for (const char* scratch : {"/tmp", "/var/tmp"})
        if (Fd folder = rootfs.open(scratch); rootfs.layered() || (folder && is_directory(folder)))
            rootfs.mount_fs(scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
    for (const char* file : {"/etc/hosts", "/etc/resolv.conf"})
        if (Fd target = rootfs.open(file); target && !is_directory(target) && ::access(file, R_OK) == 0)
            rootfs.bind(file, file, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    for (const auto& mount : spec.mounts)
        rootfs.bind(mount.source, mount.destination,
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (mount.read_only ? MOUNT_ATTR_RDONLY : 0));
    // Slurm's paths (PMIx's folders, the TaskProlog) last, so that a user's mount above them
    // cannot hide them.
    for (const auto& mount : spec.system_mounts)
        rootfs.bind(mount.source, mount.destination,
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (mount.read_only ? MOUNT_ATTR_RDONLY : 0), true);
    // CDI's edits (driver libraries, links, ld.so.cache; spec.root_edits asked for the layer):
    // a layered root is the user's and still writable, into its tmpfs, and the image beneath
    // is not touched. become_root then makes it read-only unless spec.writable.
    if (spec.cdi) cdi::apply_edits(*spec.cdi, rootfs);
    rootfs.become_root(spec.writable);
}

}  // namespace

std::vector<pid_t> enter_oci_container(const ContainerSpec& spec) {
    bool squashfs = spec.image.kind == ImageKind::squashfs;
    bool layered = spec.writable || spec.root_edits;
    int flags = CLONE_NEWNS;
    for (const auto& ns : spec.namespaces) {
        if (ns == "ipc") flags |= CLONE_NEWIPC;
        if (ns == "uts") flags |= CLONE_NEWUTS;
    }
    // The user's own ids and nothing else: nobody is root there.
    if (!enter_user_namespace(flags, false)) {
        // ENOSPC is the count of user namespaces at its limit, not a full disk (pyxis #93).
        if (errno == ENOSPC)
            throw ContainerError(
                "cannot make the container's user namespace: the limit of user namespaces is "
                "reached (sysctl user.max_user_namespaces; each running container holds one)");
        fail(
            "cannot make the container's namespaces (are unprivileged user namespaces enabled? "
            "sysctl user.max_user_namespaces)");
    }
    make_mounts_private();

    SquashfsRoot layers;
    if (squashfs || layered) {
        std::vector<std::string> sources;
        for (const auto& mount : spec.mounts) sources.push_back(mount.source);
        for (const auto& mount : spec.system_mounts) sources.push_back(mount.source);
        for (const auto& node : spec.device_nodes) sources.push_back(node.host_path);
        FusePrograms programs{spec.squashfuse, spec.fuse_overlayfs};
        layers = squashfs ? mount_squashfs_root(spec.image.path, spec.image.files ? spec.image.files->image : -1,
                                                layered, sources, programs)
                          : mount_bundle_layers(spec.image.path, sources, programs);
    }
    try {
        bool overlay = !layers.root.empty();
        make_root(spec, overlay ? layers.root : spec.image.path + "/rootfs", layered, overlay);
    } catch (...) {
        stop_fuse_daemons(layers.fuse_daemons);
        throw;
    }
    return layers.fuse_daemons;
}

}  // namespace trellis::agent
