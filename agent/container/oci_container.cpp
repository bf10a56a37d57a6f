#include "agent/container/oci_container.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "agent/container/cdi/apply.hpp"
#include "agent/container/cdi/root_editor.hpp"
#include "agent/container/squashfs_root.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) { throw ContainerError(what + ": " + std::strerror(errno)); }

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    // The magic link mount(2) takes for "this very object".
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

void write_proc(const char* file, const std::string& text) {
    Fd fd(::open(file, O_WRONLY | O_CLOEXEC));
    if (!fd || ::write(fd.get(), text.data(), text.size()) != ssize_t(text.size())) fail(std::string("write ") + file);
}

// `path` inside the image, as the container will see it: absolute links stay in the rootfs.
Fd open_inside(int root, const std::string& path) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    std::string relative = path.substr(path.find_first_not_of('/') == std::string::npos ? path.size()
                                                                                         : path.find_first_not_of('/'));
    if (relative.empty()) relative = ".";
    return Fd(int(::syscall(SYS_openat2, root, relative.c_str(), &how, sizeof how)));
}

bool is_directory(const Fd& fd) {
    struct stat info {};
    return ::fstat(fd.get(), &info) == 0 && S_ISDIR(info.st_mode);
}

void set_attributes(const Fd& mounted, std::uint64_t set, bool recursive) {
    mount_attr attr{};
    attr.attr_set = set;
    if (::syscall(SYS_mount_setattr, mounted.get(), "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                  sizeof attr) != 0)
        fail("cannot restrict a mount of the container");
}

// The container's mounts, made under the rootfs before it becomes the root.
class Rootfs {
public:
    // `layered`: the root is an overlay over the image, so mount points it lacks are made in
    // the overlay's upper layer (a tmpfs) and never in the image. `overlay`: the root is at
    // least the kernel's overlay over a squashfs, whose top folder (its upper layer's) is the
    // user's: a folder the image lacks at its top can be made there.
    Rootfs(const std::string& path, bool layered, bool overlay)
        : path_(path), layered_(layered), overlay_(overlay) {
        if (::mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
            fail("cannot bind the image " + path);
        root_ = Fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!root_) fail("cannot open the image " + path);
    }

    // A file system of the container's own at `destination`, which the image must have.
    void mount_fs(const std::string& destination, const char* type, unsigned long flags, const std::string& options) {
        Fd target = existing(destination, true);
        if (::mount(type, target.path().c_str(), type, flags, options.c_str()) != 0)
            fail("cannot mount " + std::string(type) + " at " + destination);
        if (std::string(type) == "tmpfs") scratch_.push_back(destination);
    }

    // `source` (a host path) at `destination`; read_only and the rest hold for submounts too.
    void bind(const std::string& source, const std::string& destination, std::uint64_t attributes,
              bool cover_missing_parent = false) {
        struct stat info {};
        if (::stat(source.c_str(), &info) != 0) fail("cannot bind " + source);
        Fd target = mount_point(destination, S_ISDIR(info.st_mode), cover_missing_parent);
        if (::mount(source.c_str(), target.path().c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
            fail("cannot bind " + source + " at " + destination);
        Fd mounted = existing(destination, S_ISDIR(info.st_mode));
        set_attributes(mounted, attributes, true);
    }

    // An empty file or folder in one of the container's tmpfs (never in the image).
    Fd create(const std::string& destination, bool directory) {
        fs::path path = fs::path(destination).lexically_normal();
        Fd folder(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
        std::vector<std::string> parts;
        for (const auto& part : path.relative_path()) parts.push_back(part.string());
        for (std::size_t i = 0; i < parts.size(); ++i) {
            bool last = i + 1 == parts.size();
            if (!last || directory) {
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

    // Ends the making: the rootfs becomes "/", nosuid and nodev, and read-only unless
    // `writable`.
    void become_root(bool writable) {
        if (::fchdir(root_.get()) != 0) fail("cannot enter the image");
        if (::syscall(SYS_pivot_root, ".", ".") != 0) fail("cannot make the image the root");
        if (::umount2(".", MNT_DETACH) != 0) fail("cannot leave the host's root");
        if (::chdir("/") != 0) fail("chdir /");
        Fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
        set_attributes(root, (writable ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
    }

    int root() const { return root_.get(); }
    bool layered() const { return layered_; }

private:
    Fd existing(const std::string& destination, bool directory) {
        Fd target = open_inside(root_.get(), destination);
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

    bool in_scratch(const std::string& destination) const {
        return std::any_of(scratch_.begin(), scratch_.end(), [&](const std::string& folder) {
            return destination.starts_with(folder + "/");
        });
    }

    Fd mount_point(const std::string& destination, bool directory, bool cover_missing_parent) {
        if (Fd target = open_inside(root_.get(), destination)) {
            if (is_directory(target) != directory)
                throw ContainerError(destination + " in the image is " + (directory ? "not a folder" : "a folder") +
                                     ": a " + (directory ? "folder" : "file") + " cannot be mounted there");
            return target;
        }
        if (layered_ || in_scratch(destination)) return create(destination, directory);
        if (cover_missing_parent) {
            // A path Slurm names on the host (its spool, PMIx's client base, the TaskProlog)
            // that the image lacks: the deepest folder of it the image has becomes a tmpfs of
            // the container's, with that folder's entries bound back in, and the rest of the
            // path is made there.
            fs::path parent = fs::path(destination).parent_path();
            while (parent != "/" && !open_inside(root_.get(), parent.string())) parent = parent.parent_path();
            if (parent != "/") {
                cover(parent.string());
                return create(destination, directory);
            }
            // The image lacks even the path's first folder (an image without /var, for
            // PMIx's /var/tmp/spmix_appdir_*): an overlay's top folder takes it.
            if (overlay_) return create(destination, directory);
        }
        throw ContainerError("the image has no " + destination +
                             " to mount on, and the image is never written (accepted: a path the image has, or one "
                             "under /tmp or /var/tmp, which are the container's own)");
    }

    // A tmpfs at `folder` that still shows the image's entries there (bound back in,
    // read-only; links copied): a place to make mount points without writing the image.
    void cover(const std::string& folder) {
        open_how how{};
        how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        std::string relative = fs::path(folder).relative_path().string();
        Fd image(int(::syscall(SYS_openat2, root_.get(), relative.c_str(), &how, sizeof how)));
        if (!image) fail("cannot read " + folder + " in the image");
        std::vector<std::pair<std::string, struct stat>> entries;
        if (DIR* list = ::fdopendir(::fcntl(image.get(), F_DUPFD_CLOEXEC, 0))) {
            while (dirent* entry = ::readdir(list)) {
                std::string name = entry->d_name;
                struct stat info {};
                if (name != "." && name != ".." && ::fstatat(image.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0)
                    entries.emplace_back(name, info);
            }
            ::closedir(list);
        }
        mount_fs(folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755");
        for (const auto& [name, info] : entries) {
            std::string inside = folder + "/" + name;
            if (S_ISLNK(info.st_mode)) {
                char target[4096];
                ssize_t length = ::readlinkat(image.get(), name.c_str(), target, sizeof target - 1);
                if (length < 0) continue;
                target[length] = 0;
                Fd parent = open_inside(root_.get(), folder);
                if (::symlinkat(target, parent.get(), name.c_str()) != 0) fail("cannot copy the link " + inside);
            } else if (S_ISDIR(info.st_mode) || S_ISREG(info.st_mode)) {
                Fd original(::openat(image.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
                Fd target = create(inside, S_ISDIR(info.st_mode));
                if (!original || ::mount(original.path().c_str(), target.path().c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
                    fail("cannot bind the image's " + inside + " back");
                set_attributes(existing(inside, S_ISDIR(info.st_mode)),
                               MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true);
            }
        }
    }

    std::string path_;
    bool layered_;
    bool overlay_;
    Fd root_;
    std::vector<std::string> scratch_;  // the container's own tmpfs folders
};

// The container's /dev: a tmpfs with the standard device files and the step's, bound from
// the host (a user namespace may not make device files).
void make_dev(Rootfs& rootfs, const std::vector<std::string>& devices) {
    rootfs.mount_fs("/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536k");
    for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"})
        rootfs.bind(std::string("/dev/") + name, std::string("/dev/") + name, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
    for (const auto& device : devices) rootfs.bind(device, device, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
    Fd pts = rootfs.create("/dev/pts", true);
    if (::mount("devpts", pts.path().c_str(), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != 0)
        fail("cannot mount the container's /dev/pts");
    Fd dev = open_inside(rootfs.root(), "/dev");
    for (const auto& [link, target] : std::vector<std::pair<const char*, const char*>>{{"ptmx", "pts/ptmx"},
                                                                                      {"fd", "/proc/self/fd"},
                                                                                      {"stdin", "/proc/self/fd/0"},
                                                                                      {"stdout", "/proc/self/fd/1"},
                                                                                      {"stderr", "/proc/self/fd/2"}})
        if (::symlinkat(target, dev.get(), link) != 0 && errno != EEXIST)
            fail(std::string("cannot make /dev/") + link + " in the container");
    Fd shm = rootfs.create("/dev/shm", true);
    // Ranks share memory through /dev/shm (NCCL, data loaders): the kernel's default size.
    if (::mount("shm", shm.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
        fail("cannot mount the container's /dev/shm");
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
    make_dev(rootfs, spec.devices);
    for (const char* scratch : {"/tmp", "/var/tmp"})
        if (Fd folder = open_inside(rootfs.root(), scratch); rootfs.layered() || (folder && is_directory(folder)))
            rootfs.mount_fs(scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
    for (const char* file : {"/etc/hosts", "/etc/resolv.conf"})
        if (Fd target = open_inside(rootfs.root(), file); target && !is_directory(target) && ::access(file, R_OK) == 0)
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
    if (spec.cdi) {
        cdi::MountedRoot editor(path);
        cdi::apply_edits(*spec.cdi, editor);
    }
    rootfs.become_root(spec.writable);
}

}  // namespace

std::vector<pid_t> enter_oci_container(const ContainerSpec& spec) {
    bool squashfs = spec.image.kind == ImageKind::squashfs;
    bool layered = spec.writable || spec.root_edits;
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    int flags = CLONE_NEWUSER | CLONE_NEWNS;
    for (const auto& ns : spec.namespaces) {
        if (ns == "ipc") flags |= CLONE_NEWIPC;
        if (ns == "uts") flags |= CLONE_NEWUTS;
    }
    if (::unshare(flags) != 0) {
        // ENOSPC is the count of user namespaces at its limit, not a full disk (pyxis #93).
        if (errno == ENOSPC)
            throw ContainerError("cannot make the container's user namespace: the limit of user namespaces is "
                                 "reached (sysctl user.max_user_namespaces; each running container holds one)");
        fail("cannot make the container's namespaces (are unprivileged user namespaces enabled? "
             "sysctl user.max_user_namespaces)");
    }
    // The user's own ids and nothing else: supplementary groups keep working (the kernel
    // checks them) but show as nogroup inside, and nobody is root there.
    write_proc("/proc/self/setgroups", "deny");
    write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n");
    write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail("cannot make the mounts private");

    SquashfsRoot layers;
    if (squashfs || layered) {
        std::vector<std::string> sources;
        for (const auto& mount : spec.mounts) sources.push_back(mount.source);
        for (const auto& mount : spec.system_mounts) sources.push_back(mount.source);
        sources.insert(sources.end(), spec.devices.begin(), spec.devices.end());
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
