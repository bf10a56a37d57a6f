#include "agent/container/image_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <vector>

#include "agent/container/image_policy.hpp"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

namespace trellis::agent {

namespace {

const char* accepted_cache =
    "accepted: a folder on local disk that belongs to root, mode 1777 (sticky), made by the administrator or the "
    "package";

std::string hex_of(const std::string& digest) {
    auto colon = digest.find(':');
    return colon == std::string::npos ? digest : digest.substr(colon + 1);
}

// Sums the sizes of regular files under a folder (by descriptor; the folder is closed).
std::uint64_t tree_bytes(int dir) {
    std::uint64_t total = 0;
    DIR* stream = ::fdopendir(dir);
    if (!stream) {
        ::close(dir);
        return 0;
    }
    ::rewinddir(stream);
    while (dirent* entry = ::readdir(stream)) {
        std::string name = entry->d_name;
        if (name == "." || name == "..") continue;
        struct stat info {};
        if (::fstatat(::dirfd(stream), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISREG(info.st_mode)) total += std::uint64_t(info.st_size);
        if (S_ISDIR(info.st_mode)) {
            int sub = ::openat(::dirfd(stream), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) total += tree_bytes(sub);
        }
    }
    ::closedir(stream);
    return total;
}

// Removes `name` in `parent` and everything under it, giving each folder u+rwx first: an
// unpacked image may hold folders its owner cannot enter (mode 000).
void remove_at(int parent, const std::string& name) {
    struct stat info {};
    if (::fstatat(parent, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (!S_ISDIR(info.st_mode)) {
        ::unlinkat(parent, name.c_str(), 0);
        return;
    }
    if (::fchmodat(parent, name.c_str(), 0700, 0) != 0) return;
    int dir = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir >= 0) {
        std::vector<std::string> names;
        if (DIR* stream = ::fdopendir(::dup(dir))) {
            while (dirent* entry = ::readdir(stream))
                if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
                    names.emplace_back(entry->d_name);
            ::closedir(stream);
        }
        for (auto& child : names) remove_at(dir, child);
        ::close(dir);
    }
    ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

}  // namespace

CacheLock& CacheLock::operator=(CacheLock&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

CacheLock::~CacheLock() {
    if (fd_ >= 0) ::close(fd_);
}

ImageCache::ImageCache(const config::ContainerConfig& config, std::ostream& warnings) {
    uid_t uid = ::getuid();
    if (uid == 0 || ::geteuid() == 0)
        throw PolicyError("images are imported as the job's user, never as root (run it as the user who will use it)");
    const std::string& top = config.image_cache;
    std::string key = "image_cache '" + top + "' (from " + config.origin + ")";
    if (top.empty() || top[0] != '/') throw PolicyError(key + " is not an absolute path; " + accepted_cache);
    int top_fd = ::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top_fd < 0)
        throw PolicyError(key + ": " + std::strerror(errno) +
                          (errno == ENOENT ? " (ask the administrator to make it; " : " (") + accepted_cache + ")");
    struct stat info {};
    struct statfs filesystem {};
    ::fstat(top_fd, &info);
    bool on_tmpfs = ::fstatfs(top_fd, &filesystem) == 0 && filesystem.f_type == TMPFS_MAGIC;
    ::close(top_fd);
    if (info.st_uid != 0 || !(info.st_mode & S_ISVTX) || (info.st_mode & 0777) != 0777)
        throw PolicyError(key + " belongs to uid " + std::to_string(info.st_uid) + " with mode " +
                          std::to_string((info.st_mode >> 9) & 7) + std::to_string((info.st_mode >> 6) & 7) +
                          std::to_string((info.st_mode >> 3) & 7) + std::to_string(info.st_mode & 7) + "; " +
                          accepted_cache);
    std::filesystem::path parent = std::filesystem::path(top).parent_path();
    check_root_owned(parent.string(), "the folder above image_cache");
    if (on_tmpfs)
        warnings << "trellis-agent: warning: image_cache '" << top
                 << "' is a tmpfs: images take memory and are lost at reboot (a folder on local disk is meant)\n";

    folder_ = top + "/" + std::to_string(uid);
    top_fd = ::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bool made = top_fd >= 0 && ::mkdirat(top_fd, std::to_string(uid).c_str(), 0700) == 0;
    if (top_fd >= 0 && !made && errno != EEXIST) {
        int error = errno;
        ::close(top_fd);
        throw ImageImportError("cannot make the cache folder " + folder_ + ": " + std::strerror(error) +
                               (error == ENOSPC ? " (image_cache is full)" : ""));
    }
    // O_PATH first: someone else's folder is examined (and refused by its owner) even when
    // it cannot be read.
    int path_fd = top_fd < 0 ? -1
                             : ::openat(top_fd, std::to_string(uid).c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int error = errno;
    if (top_fd >= 0) ::close(top_fd);
    if (path_fd < 0)
        throw PolicyError("the cache folder " + folder_ + " is refused: " +
                          (error == ELOOP || error == ENOTDIR ? std::string("it is a symbolic link or not a folder")
                                                              : std::string(std::strerror(error))) +
                          " (accepted: a folder of your own, mode 0700; remove it and the next import makes it)");
    ::fstat(path_fd, &info);
    if (info.st_uid == uid) fd_ = ::openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(path_fd);
    if (fd_ >= 0 && made) ::fchmod(fd_, 0700);  // whatever the umask was
    if (fd_ >= 0) ::fstat(fd_, &info);
    if (fd_ < 0 || info.st_uid != uid || (info.st_mode & 0777) != 0700) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        throw PolicyError("the cache folder " + folder_ + " is refused: it belongs to uid " + std::to_string(info.st_uid) +
                          " with mode " + std::to_string((info.st_mode >> 6) & 7) + std::to_string((info.st_mode >> 3) & 7) +
                          std::to_string(info.st_mode & 7) + " (accepted: owned by uid " + std::to_string(uid) +
                          ", mode 0700)");
    }
}

ImageCache::~ImageCache() {
    if (fd_ >= 0) ::close(fd_);
}

std::string ImageCache::entry_name(const std::string& digest, const char* suffix) { return hex_of(digest) + suffix; }

static CacheLock lock_file(int folder, const std::string& folder_path, const std::string& name, bool exclusive) {
    int fd = ::openat(folder, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        throw ImageImportError("cannot open the lock " + folder_path + "/" + name + ": " + std::strerror(errno) +
                               (errno == ENOSPC ? " (the image cache " + folder_path + " is full)" : ""));
    while (::flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0)
        if (errno != EINTR) {
            int error = errno;
            ::close(fd);
            throw ImageImportError("cannot lock " + folder_path + "/" + name + ": " + std::strerror(error));
        }
    return CacheLock(fd);
}

CacheLock ImageCache::lock(const std::string& digest, bool exclusive) const {
    return lock_file(fd_, folder_, entry_name(digest, ".lock"), exclusive);
}

CacheLock ImageCache::lock_layout(bool exclusive) const { return lock_file(fd_, folder_, "oci.lock", exclusive); }

bool ImageCache::has(const std::string& digest) const {
    struct stat info {};
    return ::fstatat(fd_, entry_name(digest, ".sqsh").c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode) &&
           ::fstatat(fd_, entry_name(digest, ".json").c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode);
}

void ImageCache::touch(const std::string& digest) const {
    ::utimensat(fd_, entry_name(digest, ".sqsh").c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

void ImageCache::remove_temporaries(const std::string& digest) const {
    std::string prefix = entry_name(digest, ".tmp");
    std::vector<std::string> names;
    if (DIR* stream = ::fdopendir(::dup(fd_))) {
        ::rewinddir(stream);
        while (dirent* entry = ::readdir(stream))
            if (std::string(entry->d_name).starts_with(prefix)) names.emplace_back(entry->d_name);
        ::closedir(stream);
    }
    for (auto& name : names) remove_at(fd_, name);
}

std::uint64_t ImageCache::bytes() const { return tree_bytes(::dup(fd_)); }

std::string ImageCache::evict_oldest(const std::string& keep) const {
    struct Image {
        std::string hex;
        timespec used;
    };
    std::vector<Image> images;
    if (DIR* stream = ::fdopendir(::dup(fd_))) {
        ::rewinddir(stream);
        while (dirent* entry = ::readdir(stream)) {
            std::string name = entry->d_name;
            struct stat info {};
            if (name.size() == 64 + 5 && name.ends_with(".sqsh") && name.substr(0, 64) != hex_of(keep) &&
                ::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode))
                images.push_back({name.substr(0, 64), info.st_mtim});
        }
        ::closedir(stream);
    }
    std::sort(images.begin(), images.end(), [](const Image& a, const Image& b) {
        return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
    });
    for (const Image& image : images) {
        // An image being imported or used holds its lock: it stays. The lock file itself
        // stays too: a process waiting on it must not end up locking a file nobody else sees.
        int fd = ::openat(fd_, (image.hex + ".lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) continue;
        bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (free) {
            // The image first: whoever finds a .sqsh finds its .json.
            ::unlinkat(fd_, (image.hex + ".sqsh").c_str(), 0);
            ::unlinkat(fd_, (image.hex + ".json").c_str(), 0);
        }
        ::close(fd);
        if (free) return "sha256:" + image.hex;
    }
    return "";
}

void remove_tree(const std::string& path) {
    auto slash = path.find_last_of('/');
    std::string parent = slash == 0 ? "/" : path.substr(0, slash);
    int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    remove_at(fd, path.substr(slash + 1));
    ::close(fd);
}

}  // namespace trellis::agent
