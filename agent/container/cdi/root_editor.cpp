#include "agent/container/cdi/root_editor.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

int open_in_root(int root, const std::string& relative, int flags) {
    struct open_how how {};
    how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(syscall(SYS_openat2, root, relative.empty() ? "." : relative.c_str(), &how, sizeof how));
}

std::vector<std::string> components(const std::string& path) {
    std::vector<std::string> out;
    std::stringstream stream(path);
    for (std::string part; std::getline(stream, part, '/');)
        if (!part.empty() && part != ".") out.push_back(part);
    return out;
}

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) close(fd);
    }
};

// The flags a bind of `host_path` must keep: in a user namespace the kernel refuses to clear
// the ro, nosuid, nodev, noexec and atime flags of a mount that came from outside it.
unsigned long locked_flags(const std::string& host_path) {
    struct statvfs vfs;
    if (statvfs(host_path.c_str(), &vfs) != 0) return 0;
    unsigned long flags = 0;
    if (vfs.f_flag & ST_RDONLY) flags |= MS_RDONLY;
    if (vfs.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (vfs.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (vfs.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (vfs.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (vfs.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    return flags;
}

}  // namespace

MountedRoot::MountedRoot(std::string root) : root_(std::move(root)) {
    root_fd_ = open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_ < 0) throw Error("cannot open the container root " + root_ + ": " + std::strerror(errno));
}

MountedRoot::~MountedRoot() {
    if (root_fd_ >= 0) close(root_fd_);
}

int MountedRoot::open_parent(const std::string& container_path, std::string& name, bool make) {
    auto parts = components(container_path);
    if (parts.empty()) throw Refused("CDI: \"" + container_path + "\" names the container's root itself");
    for (const auto& part : parts)
        if (part == "..") throw Refused("CDI: container path " + container_path + " has a '..' component");
    name = parts.back();
    parts.pop_back();
    std::string walked;
    for (const auto& part : parts) {
        std::string next = walked.empty() ? part : walked + "/" + part;
        if (make) {
            Fd parent{open_in_root(root_fd_, walked, O_PATH | O_DIRECTORY)};
            if (parent.fd < 0)
                throw Error("CDI: cannot open /" + walked + " in the container root " + root_ + ": " + std::strerror(errno));
            if (mkdirat(parent.fd, part.c_str(), 0755) != 0 && errno != EEXIST)
                throw Error("CDI: cannot make /" + next + " in the container root " + root_ + ": " + std::strerror(errno));
        }
        walked = next;
    }
    int fd = open_in_root(root_fd_, walked, O_PATH | O_DIRECTORY);
    if (fd < 0)
        throw Error("CDI: cannot open /" + walked + " in the container root " + root_ + ": " + std::strerror(errno));
    return fd;
}

void MountedRoot::bind(const BindMount& mount) {
    struct stat source;
    if (stat(mount.host_path.c_str(), &source) != 0)
        throw Refused("CDI: cannot bind " + mount.host_path + " (from " + (mount.origin.empty() ? "a spec" : mount.origin) +
                      ") into the container: " + std::strerror(errno));
    std::string name;
    Fd parent{open_parent(mount.container_path, name, true)};
    // The mount point: a folder for a folder, an empty file for anything else.
    if (S_ISDIR(source.st_mode)) {
        if (mkdirat(parent.fd, name.c_str(), 0755) != 0 && errno != EEXIST)
            throw Error("CDI: cannot make " + mount.container_path + " in the container: " + std::strerror(errno));
    } else {
        int made = openat(parent.fd, name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (made >= 0) close(made);
        else if (errno != EEXIST && errno != ELOOP && errno != ENXIO && errno != EISDIR && errno != ETXTBSY)
            throw Error("CDI: cannot make " + mount.container_path + " in the container: " + std::strerror(errno));
    }
    std::string relative = mount.container_path.substr(1);
    Fd target{open_in_root(root_fd_, relative, O_PATH | O_NOFOLLOW)};
    if (target.fd < 0)
        throw Error("CDI: cannot open " + mount.container_path + " in the container: " + std::strerror(errno));
    unsigned long bind_flags = MS_BIND;
    if (mount.recursive) bind_flags |= MS_REC;
    if (::mount(mount.host_path.c_str(), fd_path(target.fd).c_str(), nullptr, bind_flags, nullptr) != 0)
        throw Error("CDI: cannot bind " + mount.host_path + " on " + mount.container_path + " in the container: " +
                    std::strerror(errno));
    unsigned long flags = locked_flags(mount.host_path);
    if (mount.read_only) flags |= MS_RDONLY;
    if (mount.nosuid) flags |= MS_NOSUID;
    if (mount.nodev && !mount.device) flags |= MS_NODEV;
    if (mount.noexec) flags |= MS_NOEXEC;
    if (mount.device && (flags & MS_NODEV))
        throw Refused("CDI: device node " + mount.host_path + " is on a nodev mount of the host; bound into the "
                      "container it could not be opened");
    // The remount goes to the new mount, reached afresh (target.fd is the covered file).
    Fd bound{open_in_root(root_fd_, relative, O_PATH | O_NOFOLLOW)};
    if (bound.fd < 0 || ::mount(nullptr, fd_path(bound.fd).c_str(), nullptr, MS_REMOUNT | MS_BIND | flags, nullptr) != 0)
        throw Error("CDI: cannot set the flags of " + mount.container_path + " in the container: " + std::strerror(errno));
}

void MountedRoot::symlink(const Symlink& link) {
    std::string name;
    Fd parent{open_parent(link.link, name, true)};
    struct stat st;
    if (fstatat(parent.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISLNK(st.st_mode))
            throw Refused("CDI create-symlinks: " + link.link + " exists in the image and is not a symbolic link");
        if (unlinkat(parent.fd, name.c_str(), 0) != 0)
            throw Error("CDI create-symlinks: cannot replace " + link.link + ": " + std::strerror(errno));
    }
    if (symlinkat(link.target.c_str(), parent.fd, name.c_str()) != 0)
        throw Error("CDI create-symlinks: cannot make " + link.link + " -> " + link.target + ": " + std::strerror(errno));
}

void MountedRoot::write_file(const std::string& container_path, const std::string& content) {
    std::string name;
    Fd parent{open_parent(container_path, name, true)};
    // O_PATH descriptors cannot be written through: reopen the folder itself.
    Fd folder{openat(parent.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    Fd file{openat(folder.fd, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (file.fd < 0 || write(file.fd, content.data(), content.size()) != static_cast<ssize_t>(content.size()))
        throw Error("CDI: cannot write " + container_path + " in the container: " + std::strerror(errno));
}

}  // namespace trellis::agent::cdi
