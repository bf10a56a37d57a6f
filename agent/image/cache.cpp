// SPDX-License-Identifier: Apache-2.0
#include "agent/image/cache.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <functional>
#include <ostream>
#include <vector>

#include "agent/image/policy.hpp"
#include "agent/files.hpp"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

namespace trellis::agent {

namespace {

const char* accepted_cache =
    "accepted: a folder on local disk that belongs to root and only root may write, mode 0755 or 0711, made by "
    "`trellis-agent cache-folder`, the package or the administrator";

// Opens <image_cache> after checking it: root's, writable by root alone, in folders only root
// may change. Warns on `warnings` when it is a tmpfs. Throws PolicyError naming the key.
Fd open_cache_top(const config::ContainerConfig& config, std::ostream* warnings) {
    const std::string& top = config.image_cache;
    std::string key = "image_cache '" + top + "' (from " + config.origin + ")";
    if (top.empty() || top[0] != '/') throw PolicyError(key + " is not an absolute path; " + accepted_cache);
    Fd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd)
        throw PolicyError(key + ": " + std::strerror(errno) +
                          (errno == ENOENT ? " (`trellis-agent cache-folder` run as root makes it; " : " (") +
                          accepted_cache + ")");
    struct stat info {};
    struct statfs filesystem {};
    ::fstat(fd.get(), &info);
    bool on_tmpfs = ::fstatfs(fd.get(), &filesystem) == 0 && filesystem.f_type == TMPFS_MAGIC;
    if (!owned_alone_by(info, 0))
        throw PolicyError(key + " belongs to " + owner_and_mode(info) + "; " + accepted_cache +
                          ((info.st_mode & 01777) == 01777 ? " (a 1777 cache of an older trellis: `trellis-agent "
                                                             "cache-folder` run as root makes it 0755)"
                                                           : ""));
    check_root_owned(std::filesystem::path(top).parent_path().string(), "the folder above image_cache");
    if (on_tmpfs && warnings)
        *warnings << "trellis-agent: warning: image_cache '" << top
                  << "' is a tmpfs: images take memory and are lost at reboot (a folder on local disk is meant)\n";
    return fd;
}

std::string hex_of(const std::string& digest) {
    auto colon = digest.find(':');
    return colon == std::string::npos ? digest : digest.substr(colon + 1);
}

// Sums the sizes of regular files under the folder `dir`.
std::uint64_t tree_bytes(int dir) {
    std::uint64_t total = 0;
    for_each_entry(dir, [&](const std::string& name) {
        struct stat info {};
        if (::fstatat(dir, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return;
        if (S_ISREG(info.st_mode)) total += std::uint64_t(info.st_size);
        if (S_ISDIR(info.st_mode))
            if (Fd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)); sub)
                total += tree_bytes(sub.get());
    });
    return total;
}

// The names in the folder `dir` that `wanted` takes.
std::vector<std::string> names_in(int dir, const std::function<bool(const std::string&)>& wanted) {
    std::vector<std::string> names;
    for_each_entry(dir, [&](const std::string& name) {
        if (wanted(name)) names.push_back(name);
    });
    return names;
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
    if (Fd dir(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)); dir)
        for (auto& child : names_in(dir.get(), [](const std::string&) { return true; })) remove_at(dir.get(), child);
    ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

}  // namespace

ImageCache::ImageCache(const config::ContainerConfig& config, std::ostream& warnings) {
    uid_t uid = ::getuid();
    if (uid == 0 || ::geteuid() == 0)
        throw PolicyError("images are imported as the job's user, never as root (run it as the user who will use it)");
    folder_ = config.image_cache + "/" + std::to_string(uid);
    // O_PATH first: someone else's folder is examined (and refused by its owner) even when
    // it cannot be read.
    Fd path_fd(::openat(open_cache_top(config, &warnings).get(), std::to_string(uid).c_str(),
                        O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    int error = errno;
    if (!path_fd && error == ENOENT)
        throw PolicyError("the cache folder " + folder_ +
                          " does not exist yet: root makes it at the start of a job "
                          "step that asks for a registry image or an archive (srun --trellis-image=...), or an "
                          "administrator with `trellis-agent cache-folder " +
                          std::to_string(uid) +
                          "`; an import or "
                          "`trellis-agent launch --image` outside such a step needs one of those first");
    if (!path_fd)
        throw PolicyError("the cache folder " + folder_ + " is refused: " +
                          (error == ELOOP || error == ENOTDIR ? std::string("it is a symbolic link or not a folder")
                                                              : std::string(std::strerror(error))) +
                          " (accepted: a folder of your own, mode 0700, made by root; the next job step that asks "
                          "for an image puts this one aside and makes it again)");
    struct stat info {};
    ::fstat(path_fd.get(), &info);
    if (info.st_uid == uid) fd_ = Fd(::openat(path_fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd_) ::fstat(fd_.get(), &info);
    if (!fd_ || info.st_uid != uid || (info.st_mode & 0777) != 0700) {
        fd_ = Fd();
        throw PolicyError("the cache folder " + folder_ + " is refused: it belongs to " + owner_and_mode(info) +
                          " (accepted: owned by uid " + std::to_string(uid) +
                          ", mode 0700; the next job step that asks for an image puts this one aside and makes it "
                          "again)");
    }
}

ImageCache ImageCache::own_folder(const std::string& folder) {
    ImageCache cache;
    cache.folder_ = folder;
    cache.fd_ = Fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!cache.fd_) throw ImageImportError("cannot open " + folder + ": " + std::strerror(errno));
    return cache;
}

std::string ImageCache::entry_name(const std::string& digest, const char* suffix) { return hex_of(digest) + suffix; }

static CacheLock lock_file(int folder, const std::string& folder_path, const std::string& name, bool exclusive) {
    Fd fd(::openat(folder, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd)
        throw ImageImportError("cannot open the lock " + folder_path + "/" + name + ": " + std::strerror(errno) +
                               (errno == ENOSPC ? " (the image cache " + folder_path + " is full)" : ""));
    while (::flock(fd.get(), exclusive ? LOCK_EX : LOCK_SH) != 0)
        if (errno != EINTR)
            throw ImageImportError("cannot lock " + folder_path + "/" + name + ": " + std::strerror(errno));
    return CacheLock(std::move(fd));
}

CacheLock ImageCache::lock(const std::string& digest, bool exclusive) const {
    return lock_file(fd_.get(), folder_, entry_name(digest, ".lock"), exclusive);
}

CacheLock ImageCache::lock_layout(bool exclusive) const { return lock_file(fd_.get(), folder_, "oci.lock", exclusive); }

bool ImageCache::has(const std::string& digest) const {
    struct stat info {};
    return ::fstatat(fd(), entry_name(digest, ".sqsh").c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(info.st_mode) &&
           ::fstatat(fd(), entry_name(digest, ".json").c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(info.st_mode);
}

std::string ImageCache::damage(const std::string& digest) const {
    Fd image(::openat(fd(), entry_name(digest, ".sqsh").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!image) return std::string("cannot open it: ") + std::strerror(errno);
    // A squashfs superblock: the magic "hsqs", and at byte 40 the bytes the image takes
    // (little-endian, as x86 and arm64 read them).
    unsigned char block[48] = {};
    struct stat info {};
    ssize_t n = ::pread(image.get(), block, sizeof block, 0);
    ::fstat(image.get(), &info);
    if (n != ssize_t(sizeof block) || std::memcmp(block, "hsqs", 4) != 0)
        return info.st_size == 0 ? "it is empty" : "it has no squashfs superblock";
    std::uint64_t used = 0;
    for (int i = 7; i >= 0; --i) used = used << 8 | block[40 + i];
    if (std::uint64_t(info.st_size) < used)
        return "it has " + std::to_string(info.st_size) + " bytes of the " + std::to_string(used) +
               " its superblock names";
    return "";
}

void ImageCache::remove_image(const std::string& digest) const {
    // The image first: whoever finds a .sqsh finds its .json.
    ::unlinkat(fd(), entry_name(digest, ".sqsh").c_str(), 0);
    ::unlinkat(fd(), entry_name(digest, ".json").c_str(), 0);
}

void ImageCache::touch(const std::string& digest) const {
    ::utimensat(fd(), entry_name(digest, ".sqsh").c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

void ImageCache::remove_temporaries(const std::string& digest) const {
    std::string prefix = entry_name(digest, ".tmp");
    for (auto& name : names_in(fd(), [&](const std::string& name) { return name.starts_with(prefix); }))
        remove_at(fd(), name);
}

void ImageCache::remove_entries(const std::function<bool(const std::string&, const struct stat&)>& unwanted) const {
    auto matches = [&](const std::string& name) {
        struct stat info {};
        return ::fstatat(fd(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && unwanted(name, info);
    };
    for (auto& name : names_in(fd(), matches)) remove_at(fd(), name);
}

std::string ImageCache::inspection_name(pid_t pid) { return "inspect.tmp-" + std::to_string(pid); }

void ImageCache::remove_dead_inspections() const {
    auto dead = [](const std::string& name) {
        if (!name.starts_with("inspect.tmp-")) return false;
        pid_t pid = pid_t(std::strtol(name.c_str() + std::strlen("inspect.tmp-"), nullptr, 10));
        return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
    };
    for (auto& name : names_in(fd(), dead)) remove_at(fd(), name);
}

std::uint64_t ImageCache::bytes() const { return tree_bytes(fd()); }

std::string ImageCache::evict_oldest(const std::string& keep) const {
    struct Image {
        std::string hex;
        timespec used;
    };
    std::vector<Image> images;
    for_each_entry(fd(), [&](const std::string& name) {
        struct stat info {};
        if (name.size() == 64 + 5 && name.ends_with(".sqsh") && name.substr(0, 64) != hex_of(keep) &&
            ::fstatat(fd(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode))
            images.push_back({name.substr(0, 64), info.st_mtim});
    });
    std::sort(images.begin(), images.end(), [](const Image& a, const Image& b) {
        return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
    });
    for (const Image& image : images) {
        // An image being imported or used holds its lock: it stays. The lock file itself
        // stays too: a process waiting on it must not end up locking a file nobody else sees.
        Fd lock(::openat(fd(), (image.hex + ".lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
        remove_image(image.hex);
        return "sha256:" + image.hex;
    }
    return "";
}

std::string make_cache_top(const config::ContainerConfig& config) {
    if (::geteuid() != 0) throw PolicyError("the image cache is made by root (run as root)");
    const std::string& top = config.image_cache;
    if (top.empty() || top[0] != '/')
        throw PolicyError("image_cache '" + top + "' (from " + config.origin + ") is not an absolute path");
    std::string parent = std::filesystem::path(top).parent_path().string();
    std::error_code error;
    std::filesystem::create_directories(parent, error);
    check_root_owned(parent, "the folder above image_cache");
    bool made = ::mkdir(top.c_str(), 0755) == 0;
    if (!made && errno != EEXIST) throw ImageImportError("cannot make " + top + ": " + std::strerror(errno));
    Fd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat info {};
    if (!fd || ::fstat(fd.get(), &info) != 0)
        throw PolicyError("image_cache '" + top + "' is refused: a symbolic link or not a folder");
    std::string note;
    if (made) {
        ::fchmod(fd.get(), 0755);  // whatever the umask was
        note = "made " + top + " (root's, 0755)";
    } else if (info.st_uid == 0 && (info.st_mode & 07777) == 01777 && ::fchmod(fd.get(), 0755) == 0) {
        // An older trellis's top: every user could write there. Users' folders in it stay
        // theirs; anything else under a uid's name is put aside when that user's folder is made.
        note = top + " was 1777 (an older trellis): now 0755, and root makes each user's folder";
    } else if (!owned_alone_by(info, 0)) {
        throw PolicyError("image_cache '" + top + "' (from " + config.origin + ") belongs to " + owner_and_mode(info) +
                          "; " + accepted_cache +
                          " (left as it is: see what else uses it, then chown root and chmod 0755)");
    }
    return note;
}

std::string make_user_cache_folder(const config::ContainerConfig& config, uid_t uid, gid_t gid) {
    if (::geteuid() != 0) throw PolicyError("a user's image cache folder is made by root (run as root)");
    if (uid == 0) throw PolicyError("root has no image cache folder: images are imported as the job's user");
    Fd top_fd = open_cache_top(config, nullptr);
    int top = top_fd.get();
    std::string name = std::to_string(uid), folder = config.image_cache + "/" + name, note;
    auto fail = [&](const std::string& what) {
        throw ImageImportError("cannot " + what + " " + folder + ": " + std::strerror(errno));
    };
    struct stat info {};
    if (::fstatat(top, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
        (!S_ISDIR(info.st_mode) || info.st_uid != uid)) {
        // Left by someone else under this uid (a 1777 top let anyone write there): kept for the
        // administrator to look at, never used or entered.
        std::string aside;
        for (int tries = 0;; ++tries) {
            aside =
                name + ".refused-" + std::to_string(std::time(nullptr)) + (tries ? "-" + std::to_string(tries) : "");
            if (::renameat2(top, name.c_str(), top, aside.c_str(), RENAME_NOREPLACE) == 0) break;
            if (errno != EEXIST || tries == 100) fail("put aside");
        }
        note = folder + " belonged to uid " + std::to_string(info.st_uid) +
               (S_ISDIR(info.st_mode) ? "" : " and was no folder") + ": put aside as " + aside;
    }
    if (::mkdirat(top, name.c_str(), 0700) != 0 && errno != EEXIST) fail("make");
    Fd fd(::openat(top, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) fail("open");
    // Only root writes in the top folder, so this is the folder just examined or made.
    if (::fstat(fd.get(), &info) != 0 || (info.st_uid != uid && ::fchown(fd.get(), uid, gid) != 0) ||
        ::fchmod(fd.get(), 0700) != 0)
        throw ImageImportError("cannot give " + folder + " to uid " + std::to_string(uid) + ": " +
                               std::strerror(errno));
    return note;
}

void remove_tree(const std::string& path) {
    auto slash = path.find_last_of('/');
    std::string parent = slash == 0 ? "/" : path.substr(0, slash);
    if (Fd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); fd)
        remove_at(fd.get(), path.substr(slash + 1));
}

}  // namespace trellis::agent
