// SPDX-License-Identifier: Apache-2.0
#include "agent/container/rootfs.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "agent/container/container_spec.hpp"
#include "agent/container/ld_cache.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) { throw ContainerError(what + ": " + std::strerror(errno)); }

// `path` inside the root `root`, resolved as the container will resolve it.
Fd open_in_root(int root, const std::string& path, int flags) {
    open_how how{};
    how.flags = std::uint64_t(flags | O_CLOEXEC);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    std::string relative = fs::path(path).relative_path().string();
    if (relative.empty()) relative = ".";
    return Fd(int(::syscall(SYS_openat2, root, relative.c_str(), &how, sizeof how)));
}

bool is_directory(const Fd& fd) {
    struct stat info {};
    return ::fstat(fd.get(), &info) == 0 && S_ISDIR(info.st_mode);
}

int set_attributes(int dir, const char* path, unsigned flags, std::uint64_t set, std::uint64_t clear) {
    mount_attr attributes{};
    attributes.attr_set = set;
    attributes.attr_clr = clear;
    return int(::syscall(SYS_mount_setattr, dir, path, flags, &attributes, sizeof attributes));
}

void restrict_mount(const Fd& mounted, std::uint64_t set, bool recursive) {
    if (set_attributes(mounted.get(), "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), set, 0) != 0)
        fail("cannot restrict a mount of the container");
}

// A CDI path in the container: absolute, without "..", not the root itself.
void check_container_path(const std::string& path) {
    fs::path parts(path);
    if (parts.relative_path().empty()) throw Refused("CDI: \"" + path + "\" names the container's root itself");
    for (const auto& part : parts)
        if (part == "..") throw Refused("CDI: container path " + path + " has a '..' component");
}

}  // namespace

Rootfs::Rootfs(const std::string& path, bool layered, bool overlay)
    : path_(path), layered_(layered), overlay_(overlay) {
    if (::mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        fail("cannot bind the image " + path);
    root_ = Fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root_) fail("cannot open the image " + path);
}

Fd Rootfs::open(const std::string& path, int flags) const { return open_in_root(root_.get(), path, O_PATH | flags); }

void Rootfs::mount_fs(const std::string& destination, const char* type, unsigned long flags,
                      const std::string& options) {
    Fd target = existing(destination, true);
    if (::mount(type, target.path().c_str(), type, flags, options.c_str()) != 0)
        fail("cannot mount " + std::string(type) + " at " + destination);
    if (std::string(type) == "tmpfs") scratch_.push_back(destination);
}

void Rootfs::mount_fs_new(const std::string& destination, const char* type, unsigned long flags,
                          const std::string& options) {
    Fd target = create(destination, true);
    if (::mount(type, target.path().c_str(), type, flags, options.c_str()) != 0)
        fail("cannot mount the container's " + destination);
}

void Rootfs::bind(const std::string& source, const std::string& destination, std::uint64_t attributes,
                  bool cover_missing_parent) {
    struct stat info {};
    if (::stat(source.c_str(), &info) != 0) fail("cannot bind " + source);
    Fd target = mount_point(destination, S_ISDIR(info.st_mode), cover_missing_parent);
    if (::mount(source.c_str(), target.path().c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        fail("cannot bind " + source + " at " + destination);
    restrict_mount(existing(destination, S_ISDIR(info.st_mode)), attributes, true);
}

Fd Rootfs::create(const std::string& destination, bool directory) {
    // Component by component, never through a link: what is made lands in the container's
    // own file systems, never through one of the image's links into the image or a bind.
    fs::path path = fs::path(destination).lexically_normal();
    Fd folder(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
    std::vector<std::string> parts;
    for (const auto& part : path.relative_path()) parts.push_back(part.string());
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i + 1 < parts.size() || directory) {
            if (::mkdirat(folder.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
                fail("cannot make " + destination + " in the container");
            folder = Fd(::openat(folder.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        } else {
            Fd file(::openat(folder.get(), parts[i].c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
            if (!file) fail("cannot make " + destination + " in the container");
            folder = Fd(::openat(folder.get(), parts[i].c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        }
        if (!folder) fail("cannot open " + destination + " in the container");
    }
    return folder;
}

Fd Rootfs::parent_in_root(const std::string& path, std::string& name) {
    check_container_path(path);
    std::vector<std::string> parts;
    for (const auto& part : fs::path(path).relative_path()) parts.push_back(part.string());
    name = parts.back();
    parts.pop_back();
    fs::path walked = "/";
    for (const auto& part : parts) {
        Fd parent = open(walked, O_DIRECTORY);
        if (!parent || (::mkdirat(parent.get(), part.c_str(), 0755) != 0 && errno != EEXIST))
            throw Error("CDI: cannot make " + (walked / part).string() + " in the container root " + path_ + ": " +
                        std::strerror(errno));
        walked /= part;
    }
    Fd parent = open(walked, O_DIRECTORY);
    if (!parent)
        throw Error("CDI: cannot open " + walked.string() + " in the container root " + path_ + ": " +
                    std::strerror(errno));
    return parent;
}

void Rootfs::link(const std::string& folder, const char* name, const char* target) {
    Fd at = open(folder, O_DIRECTORY);
    if (!at || (::symlinkat(target, at.get(), name) != 0 && errno != EEXIST))
        fail("cannot make " + folder + "/" + name + " in the container");
}

void Rootfs::become_root(bool writable) {
    if (::fchdir(root_.get()) != 0) fail("cannot enter the image");
    if (::syscall(SYS_pivot_root, ".", ".") != 0) fail("cannot make the image the root");
    if (::umount2(".", MNT_DETACH) != 0) fail("cannot leave the host's root");
    if (::chdir("/") != 0) fail("chdir /");
    Fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    restrict_mount(root, (writable ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
}

Fd Rootfs::existing(const std::string& destination, bool directory) {
    Fd target = open(destination);
    if (!target && layered_) target = create(destination, directory);
    if (!target)
        throw ContainerError("the image has no " + destination + " " + (directory ? "folder" : "file") +
                             " (accepted: images with /proc, /sys and /dev folders, as distribution images have; "
                             "make them in the rootfs)");
    if (is_directory(target) != directory)
        throw ContainerError(destination + " in the image is " + (directory ? "not a folder" : "a folder") +
                             ": it cannot take this mount");
    return target;
}

bool Rootfs::in_scratch(const std::string& destination) const {
    return std::any_of(scratch_.begin(), scratch_.end(),
                       [&](const std::string& folder) { return destination.starts_with(folder + "/"); });
}

Fd Rootfs::mount_point(const std::string& destination, bool directory, bool cover_missing_parent) {
    if (Fd target = open(destination)) {
        if (is_directory(target) != directory)
            throw ContainerError(destination + " in the image is " + (directory ? "not a folder" : "a folder") +
                                 ": a " + (directory ? "folder" : "file") + " cannot be mounted there");
        return target;
    }
    if (layered_ || in_scratch(destination)) return create(destination, directory);
    if (cover_missing_parent) {
        // A path Slurm names on the host (its spool, PMIx's client base, the TaskProlog) that
        // the image lacks: the deepest folder of it the image has becomes a tmpfs of the
        // container's, with that folder's entries bound back in, and the rest is made there.
        fs::path parent = fs::path(destination).parent_path();
        while (parent != "/" && !open(parent.string())) parent = parent.parent_path();
        if (parent != "/") {
            cover(parent.string());
            return create(destination, directory);
        }
        // The image lacks even the path's first folder (an image without /var, for PMIx's
        // /var/tmp/spmix_appdir_*): an overlay's top folder takes it.
        if (overlay_) return create(destination, directory);
    }
    throw ContainerError("the image has no " + destination +
                         " to mount on, and the image is never written (accepted: a path the image has, or one under "
                         "/tmp or /var/tmp, which are the container's own)");
}

// A tmpfs at `folder` that still shows the image's entries there (bound back in, read-only;
// links copied): a place to make mount points without writing the image.
void Rootfs::cover(const std::string& folder) {
    Fd image = open_in_root(root_.get(), folder, O_RDONLY | O_DIRECTORY);
    if (!image) fail("cannot read " + folder + " in the image");
    std::vector<std::pair<std::string, struct stat>> entries;
    for_each_entry(image.get(), [&](const std::string& name) {
        struct stat info {};
        if (::fstatat(image.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0) entries.emplace_back(name, info);
    });
    mount_fs(folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755");
    for (const auto& [name, info] : entries) {
        std::string inside = folder + "/" + name;
        if (S_ISLNK(info.st_mode)) {
            char target[4096];
            ssize_t length = ::readlinkat(image.get(), name.c_str(), target, sizeof target - 1);
            if (length < 0) continue;
            target[length] = 0;
            Fd parent = open(folder);
            if (::symlinkat(target, parent.get(), name.c_str()) != 0) fail("cannot copy the link " + inside);
        } else if (S_ISDIR(info.st_mode) || S_ISREG(info.st_mode)) {
            Fd original(::openat(image.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
            Fd target = create(inside, S_ISDIR(info.st_mode));
            if (!original ||
                ::mount(original.path().c_str(), target.path().c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
                fail("cannot bind the image's " + inside + " back");
            restrict_mount(existing(inside, S_ISDIR(info.st_mode)),
                           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true);
        }
    }
}

void Rootfs::bind(const cdi::BindMount& mount) {
    struct stat source {};
    if (::stat(mount.host_path.c_str(), &source) != 0)
        throw Refused("CDI: cannot bind " + mount.host_path + " (from " +
                      (mount.origin.empty() ? "a spec" : mount.origin) +
                      ") into the container: " + std::strerror(errno));
    struct statvfs host {};
    if (mount.device && ::statvfs(mount.host_path.c_str(), &host) == 0 && (host.f_flag & ST_NODEV))
        throw Refused("CDI: device node " + mount.host_path +
                      " is on a nodev mount of the host; bound into the "
                      "container it could not be opened");
    std::string name;
    Fd parent = parent_in_root(mount.container_path, name);
    // The mount point: a folder for a folder, an empty file for anything else; the last
    // component is never followed (a link there is mounted over, not through).
    if (S_ISDIR(source.st_mode)) {
        if (::mkdirat(parent.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
            throw Error("CDI: cannot make " + mount.container_path + " in the container: " + std::strerror(errno));
    } else if (Fd made(::openat(parent.get(), name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                                0644));
               !made && errno != EEXIST && errno != ELOOP && errno != ENXIO && errno != EISDIR && errno != ETXTBSY) {
        throw Error("CDI: cannot make " + mount.container_path + " in the container: " + std::strerror(errno));
    }
    Fd target = open(mount.container_path, O_NOFOLLOW);
    if (!target || ::mount(mount.host_path.c_str(), target.path().c_str(), nullptr,
                           MS_BIND | (mount.recursive ? MS_REC : 0), nullptr) != 0)
        throw Error("CDI: cannot bind " + mount.host_path + " on " + mount.container_path +
                    " in the container: " + std::strerror(errno));
    // Only flags are added: those a bind from outside the user namespace holds stay locked on.
    // The new mount is reached afresh (`target` is what it covers).
    std::uint64_t flags = (mount.read_only ? MOUNT_ATTR_RDONLY : 0) | (mount.nosuid ? MOUNT_ATTR_NOSUID : 0) |
                          (mount.nodev && !mount.device ? MOUNT_ATTR_NODEV : 0) |
                          (mount.noexec ? MOUNT_ATTR_NOEXEC : 0);
    Fd bound = open(mount.container_path, O_NOFOLLOW);
    if (!bound || set_attributes(bound.get(), "", AT_EMPTY_PATH | (mount.recursive ? AT_RECURSIVE : 0), flags, 0) != 0)
        throw Error("CDI: cannot set the flags of " + mount.container_path +
                    " in the container: " + std::strerror(errno));
}

void Rootfs::symlink(const cdi::Symlink& link) {
    std::string name;
    Fd parent = parent_in_root(link.link, name);
    struct stat st {};
    if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISLNK(st.st_mode))
            throw Refused("CDI create-symlinks: " + link.link + " exists in the image and is not a symbolic link");
        if (::unlinkat(parent.get(), name.c_str(), 0) != 0)
            throw Error("CDI create-symlinks: cannot replace " + link.link + ": " + std::strerror(errno));
    }
    if (::symlinkat(link.target.c_str(), parent.get(), name.c_str()) != 0)
        throw Error("CDI create-symlinks: cannot make " + link.link + " -> " + link.target + ": " +
                    std::strerror(errno));
}

void Rootfs::write_file(const std::string& container_path, const std::string& content) {
    std::string name;
    Fd parent = parent_in_root(container_path, name);
    // An O_PATH descriptor cannot be written through: the folder reopened.
    Fd folder(::openat(parent.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Fd file(::openat(folder.get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!file || ::write(file.get(), content.data(), content.size()) != ssize_t(content.size()))
        throw Error("CDI: cannot write " + container_path + " in the container: " + std::strerror(errno));
}

void Rootfs::build_ld_cache(const std::vector<std::string>& folders) {
    agent::build_ld_cache(path_, folders, cdi::ld_conf_file);
}

void make_dev(Rootfs& rootfs, const std::vector<cdi::BindMount>& nodes) {
    rootfs.mount_fs("/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536k");
    for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"})
        rootfs.bind(std::string("/dev/") + name, std::string("/dev/") + name, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
    for (const auto& node : nodes) {
        cdi::check_host_device_node(node);
        rootfs.bind(node);
    }
    rootfs.mount_fs_new("/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
    for (const auto& [name, target] : std::vector<std::pair<const char*, const char*>>{{"ptmx", "pts/ptmx"},
                                                                                       {"fd", "/proc/self/fd"},
                                                                                       {"stdin", "/proc/self/fd/0"},
                                                                                       {"stdout", "/proc/self/fd/1"},
                                                                                       {"stderr", "/proc/self/fd/2"}})
        rootfs.link("/dev", name, target);
    // Ranks share memory through /dev/shm (NCCL, data loaders): the kernel's default size.
    rootfs.mount_fs_new("/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
}

void make_mounts_private() {
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail("cannot make the mounts private");
}

void mount_tmpfs(const std::string& at, const std::string& options, const std::string& what) {
    if (::mount("trellis-layers", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) fail(what);
}

void mount_overlay(const std::string& at, const std::string& options, const std::string& what) {
    if (::mount("overlay", at.c_str(), "overlay", MS_NOSUID | MS_NODEV, options.c_str()) != 0) fail(what);
}

void bind_read_only(const std::string& source, const std::string& at, const std::string& what) {
    if (::mount(source.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        ::mount(nullptr, at.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
        fail(what);
}

int mount_fuse(const std::string& source, const std::string& target, const std::string& type, bool read_only) {
    // Inherited by the daemon at this number (no O_CLOEXEC), above the 0 to 3 a helper's
    // start sets up.
    int fuse = above_helper_stdio(::open("/dev/fuse", O_RDWR));
    if (fuse < 0) fail("cannot open /dev/fuse (is the fuse module loaded, and /dev/fuse 0666?)");
    std::string options = "fd=" + std::to_string(fuse) + ",rootmode=40000,user_id=" + std::to_string(::getuid()) +
                          ",group_id=" + std::to_string(::getgid()) + ",default_permissions";
    if (::mount(source.c_str(), target.c_str(), ("fuse." + type).c_str(),
                (read_only ? MS_RDONLY : 0) | MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
        int error = errno;
        ::close(fuse);
        errno = error;
        fail("cannot mount FUSE for " + type + " at " + target);
    }
    return fuse;
}

bool mount_read_only_but(const std::vector<std::string>& writable) {
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        set_attributes(AT_FDCWD, "/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) != 0)
        return false;
    for (const auto& folder : writable)
        if (::mount(folder.c_str(), folder.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
            set_attributes(AT_FDCWD, folder.c_str(), 0, 0, MOUNT_ATTR_RDONLY) != 0)
            return false;
    return true;
}

bool mount_own_proc() { return ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0; }

}  // namespace trellis::agent
