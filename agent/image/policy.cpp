// SPDX-License-Identifier: Apache-2.0
#include "agent/image/policy.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "agent/files.hpp"
#include "common/error.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

std::string canonical_or_refuse(const std::string& path, const std::string& what) {
    std::error_code error;
    auto canonical = fs::canonical(path, error);
    if (error)
        throw PolicyError(what + " '" + path + "' does not exist or cannot be read by uid " +
                          std::to_string(::getuid()) + ": " + error.message());
    return canonical.string();
}

bool has_dot_dot(const std::string& path) {
    return path == ".." || path.starts_with("../") || path.find("/../") != std::string::npos || path.ends_with("/..");
}

std::string joined(const std::vector<std::string>& items) {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
    return text;
}

// "/data" allows "/data" and "/data/x", not "/database".
bool under(const std::string& path, std::string prefix) {
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (prefix == "/") return true;
    return path == prefix || (path.starts_with(prefix) && path[prefix.size()] == '/');
}

void refuse_control(const std::string& value, const std::string& what) {
    try {
        refuse_control_characters(value, what);
    } catch (const UsageError& error) {
        throw PolicyError(error.what());
    }
}

// nftw's walk reports here; the first offence is kept and ends the walk.
std::string offence;
bool suid_allowed = false;

int inspect(const char* path, const struct stat* info, int type, struct FTW*) {
    if (type == FTW_NS) return 0;  // beyond the user's reach, in the image as on the host
    // An unreadable folder (FTW_DNR) is still checked itself; its contents are beyond reach.
    std::string why;
    if (info->st_uid != 0)
        why = "belongs to uid " + std::to_string(info->st_uid) + ", who could change it for every user";
    else if (!S_ISLNK(info->st_mode) && (info->st_mode & (S_IWGRP | S_IWOTH)))
        why = "is writable by " + std::string((info->st_mode & S_IWOTH) ? "everyone" : "its group") +
              " on the host (mode " +
              std::to_string((info->st_mode >> 6 & 7) * 100 + (info->st_mode >> 3 & 7) * 10 + (info->st_mode & 7)) +
              ")";
    else if (S_ISCHR(info->st_mode) || S_ISBLK(info->st_mode))
        why = "is a device file, usable by anyone who reaches the image";
    else if (S_ISREG(info->st_mode) && (info->st_mode & (S_ISUID | S_ISGID)) && !suid_allowed)
        why = "is setuid or setgid on a filesystem not mounted nosuid: anyone could run it with its owner's rights";
    if (why.empty()) return 0;
    offence = std::string(path) + " " + why;
    return 1;
}

}  // namespace

void check_root_owned(const std::string& path, const std::string& what) {
    for (fs::path part = path;; part = part.parent_path()) {
        struct stat info {};
        if (::lstat(part.c_str(), &info) != 0) throw PolicyError(what + ": cannot examine " + part.string());
        bool writable_by_others = (info.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        bool sticky = (info.st_mode & S_ISVTX) != 0;
        if (S_ISLNK(info.st_mode) || info.st_uid != 0 || (writable_by_others && !(sticky && part != path)))
            throw PolicyError(what + " '" + path + "' is shared by every user, so " + part.string() +
                              " must belong to root and be writable by root alone");
        if (part == part.parent_path()) return;
    }
}

namespace {

bool matches_registry_entry(const std::string& entry, const ImageReference& reference) {
    // "host[:port]" alone: the whole registry. Otherwise a pattern over "host[:port]/repository".
    if (entry.find('/') == std::string::npos) return entry == reference.host;
    return ::fnmatch(entry.c_str(), reference.registry_path().c_str(), FNM_PATHNAME) == 0;
}

CheckedImage check_registry_image(const ImageReference& reference, const config::ContainerConfig& config) {
    for (const auto& entry : config.allowed_registries)
        if (matches_registry_entry(entry, reference)) return {"", ImageKind::registry, reference, "", nullptr};
    throw PolicyError("image '" + reference.text() + "': registry repository '" + reference.registry_path() +
                      "' is not allowed on this cluster (allowed_registries in " + config.origin + ": " +
                      (config.allowed_registries.empty() ? "none" : joined(config.allowed_registries)) +
                      "; accepted: a repository matching one of those patterns, or any repository of a registry "
                      "listed as host[:port])");
}

bool matches_allowed_images(const std::string& path, const config::ContainerConfig& config) {
    for (const auto& pattern : config.allowed_images)
        if (::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0) return true;
    return false;
}

// A user's image runs only in their own container, but another user who may rename entries in
// a folder on its way could swap the image, or the folder the container's layers are mounted
// over, while the container is made: each folder down to the image must be the caller's or
// root's, and one that others may write must be sticky (they cannot rename what is not
// theirs) with the next folder on the way the caller's or root's.
void check_user_folders(const std::string& path, const std::string& what) {
    uid_t uid = ::getuid();
    fs::path folder = fs::path(path).parent_path();
    std::vector<fs::path> way;
    for (fs::path part = folder;; part = part.parent_path()) {
        way.insert(way.begin(), part);
        if (part == part.parent_path()) break;
    }
    for (std::size_t i = 0; i < way.size(); ++i) {
        struct stat info {};
        if (::lstat(way[i].c_str(), &info) != 0) throw PolicyError(what + ": cannot examine " + way[i].string());
        std::string why;
        if (info.st_uid != uid && info.st_uid != 0)
            why = "belongs to uid " + std::to_string(info.st_uid);
        else if (info.st_mode & (S_IWGRP | S_IWOTH)) {
            struct stat next {};
            bool next_ours = i + 1 == way.size() ||
                             (::lstat(way[i + 1].c_str(), &next) == 0 && (next.st_uid == uid || next.st_uid == 0));
            if (!(info.st_mode & S_ISVTX))
                why = "is writable by " + std::string((info.st_mode & S_IWOTH) ? "everyone" : "its group") + " (mode " +
                      mode_text(info.st_mode) + ") without the sticky bit";
            else if (!next_ours)
                why = "is sticky, but " + way[i + 1].string() + " in it belongs to uid " + std::to_string(next.st_uid);
        }
        if (!why.empty())
            throw PolicyError(what + " '" + path + "' is refused: the folder " + way[i].string() + " " + why +
                              ", so another user could rename entries on its way while the container is made "
                              "(accepted: folders of the user's or root's; a group folder with the sticky bit, "
                              "chmod +t, holding a folder of the user's own)");
    }
}

// The descriptor's file: regular, the caller's or root's (root's alone, not writable by
// others, for an administrator's).
void check_opened(int fd, const std::string& path, const std::string& what, bool administrators) {
    struct stat info {};
    ::fstat(fd, &info);
    if (!S_ISREG(info.st_mode))
        throw PolicyError(what + " '" + path + "' is not a regular file (accepted: a regular file)");
    if (administrators && !owned_alone_by(info, 0))
        throw PolicyError(what + " '" + path +
                          "' is shared by every user, so it must belong to root and be writable "
                          "by root alone (it belongs to " +
                          owner_and_mode(info) + ")");
    if (info.st_uid != ::getuid() && info.st_uid != 0)
        throw PolicyError(what + " '" + path + "' belongs to uid " + std::to_string(info.st_uid) + ", not to uid " +
                          std::to_string(::getuid()) + " who runs it (accepted: the user's own files, or root's)");
    // Opened once, but its bytes could still change under the descriptor.
    if (info.st_mode & (S_IWGRP | S_IWOTH))
        throw PolicyError(what + " '" + path + "' is writable by " +
                          ((info.st_mode & S_IWOTH) ? "everyone" : "its group") + " (mode " + mode_text(info.st_mode) +
                          "), who could change it while it is used (accepted: "
                          "writable by its owner alone: chmod go-w)");
}

// Opens the image (and, for a .sqsh, the settings beside it) once, through its folder opened
// without following any link, and checks what was opened.
std::shared_ptr<ImageFiles> open_image_files(const std::string& path, const std::string& settings,
                                             const std::string& what, bool administrators) {
    auto files = std::make_shared<ImageFiles>();
    fs::path canonical(path);
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    int folder = int(::syscall(SYS_openat2, AT_FDCWD, canonical.parent_path().c_str(), &how, sizeof how));
    if (folder < 0)
        throw PolicyError(what + " '" + path + "': its folder changed while it was checked (" + std::strerror(errno) +
                          ")");
    // O_NONBLOCK: a FIFO put in the file's place must not hold the open; checked as a
    // regular file, then blocking again.
    auto open_file = [&](const std::string& name) {
        int fd = ::openat(folder, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0) ::fcntl(fd, F_SETFL, 0);
        return fd;
    };
    files->image = open_file(canonical.filename().string());
    int error = errno;
    if (files->image >= 0 && !settings.empty()) {
        files->settings = open_file(fs::path(settings).filename().string());
        error = errno;
    }
    ::close(folder);
    if (files->image < 0)
        throw PolicyError(what + " '" + path + "' cannot be opened by uid " + std::to_string(::getuid()) + ": " +
                          (error == ELOOP ? "it is a symbolic link now" : std::strerror(error)));
    check_opened(files->image, path, what, administrators);
    if (!settings.empty() && files->settings < 0 && error != ENOENT)
        throw PolicyError("the settings '" + settings + "' of image '" + path + "' are refused: " +
                          (error == ELOOP ? std::string("a link (accepted: a regular file beside the image)")
                                          : std::string(std::strerror(error))));
    if (files->settings >= 0) check_opened(files->settings, settings, "the settings of " + what, administrators);
    return files;
}

// oci-archive:, docker-archive: and .sqsh files. An administrator's (matching allowed_images,
// root's and in folders only root may change) is trusted as a bundle is; any other is the
// user's own, accepted only where allow_user_images says so, since it would get around
// allowed_registries.
CheckedImage check_image_file(const ImageReference& reference, const config::ContainerConfig& config) {
    bool squashfs = reference.kind == ReferenceKind::path;
    const std::string what = squashfs ? "squashfs image" : "image archive";
    if (has_dot_dot(reference.path))
        throw PolicyError("image '" + reference.text() + "': '..' is not accepted in an image path");
    CheckedImage checked{canonical_or_refuse(reference.path, what), squashfs ? ImageKind::squashfs : ImageKind::archive,
                         reference, "", nullptr};
    refuse_control(checked.path, "the image's resolved path");
    if (checked.path.find_first_of(",:") != std::string::npos)
        throw PolicyError("image '" + reference.text() + "' resolves to '" + checked.path +
                          "', which holds ',' or ':' (accepted: paths without them)");
    if (squashfs && !checked.path.ends_with(".sqsh"))
        throw PolicyError("image '" + reference.path + "' resolves to '" + checked.path +
                          "', which is not a .sqsh file (accepted: a link only to another .sqsh file)");
    std::string settings = squashfs ? checked.path.substr(0, checked.path.size() - 5) + ".json" : "";
    bool administrators = matches_allowed_images(checked.path, config);
    if (administrators) {
        check_root_owned(fs::path(checked.path).parent_path().string(), what);
    } else if (config.allow_user_images) {
        check_user_folders(checked.path, what);
    } else {
        throw PolicyError("image '" + reference.text() +
                          "' is a file of the user's own: not allowed on this cluster "
                          "(allow_user_images = false in " +
                          config.origin + ", and allowed_images: " +
                          (config.allowed_images.empty() ? "none" : joined(config.allowed_images)) +
                          "; accepted: an administrator's file matching allowed_images, or any file of the user's "
                          "own with allow_user_images = true)");
    }
    checked.files = open_image_files(checked.path, settings, what, administrators);
    if (checked.files->settings >= 0) checked.settings = settings;
    return checked;
}

ImageReference parsed_or_refuse(const std::string& image) {
    try {
        return parse_image_reference(image);
    } catch (const UsageError& error) {
        throw PolicyError(error.what());
    }
}

}  // namespace

CheckedImage check_image(const std::string& image, const config::ContainerConfig& config) {
    refuse_control(image, "the image path");
    if (image.empty() || image[0] != '/') {
        auto reference = parsed_or_refuse(image);
        if (reference.kind == ReferenceKind::registry) return check_registry_image(reference, config);
        return check_image_file(reference, config);
    }
    if (image.find_first_of(",:") != std::string::npos)
        throw PolicyError("image '" + image +
                          "' holds ',' or ':', which a runtime's lists would split (accepted: "
                          "paths without them)");
    auto reference = parsed_or_refuse(image);
    if (reference.is_squashfs_file()) return check_image_file(reference, config);
    if (has_dot_dot(image)) throw PolicyError("image '" + image + "': '..' is not accepted in an image path");
    CheckedImage checked{canonical_or_refuse(image, "image"), ImageKind::oci_bundle, reference, {}, nullptr};
    refuse_control(checked.path, "the image's resolved path");
    if (checked.path.find_first_of(",:") != std::string::npos)
        throw PolicyError("image '" + image + "' resolves to '" + checked.path +
                          "', which holds ',' or ':' (accepted: paths without them)");
    std::error_code error;
    if (fs::is_directory(checked.path, error)) {
        if (!fs::is_directory(fs::path(checked.path) / "rootfs", error))
            throw PolicyError("image '" + image + "' is a folder without rootfs/: not an OCI bundle");
    } else if (checked.path.ends_with(".sif") && fs::is_regular_file(checked.path, error)) {
        checked.kind = ImageKind::sif;
    } else {
        throw PolicyError("image '" + image +
                          "' is neither an OCI bundle (a folder with rootfs/), a .sif file nor "
                          "a path ending in .sqsh");
    }
    if (!matches_allowed_images(checked.path, config))
        throw PolicyError("image '" + checked.path + "' is not allowed on this cluster (allowed_images in " +
                          config.origin + ": " +
                          (config.allowed_images.empty() ? "none" : joined(config.allowed_images)) + ")");
    check_root_owned(checked.kind == ImageKind::oci_bundle ? checked.path + "/rootfs" : checked.path,
                     checked.kind == ImageKind::oci_bundle ? "OCI bundle" : "image");
    return checked;
}

ImageFiles::~ImageFiles() {
    if (image >= 0) ::close(image);
    if (settings >= 0) ::close(settings);
}

bool registry_is_insecure(const ImageReference& reference, const config::ContainerConfig& config) {
    for (const auto& host : config.insecure_registries)
        if (host == reference.host) return true;
    return false;
}

void check_image_contents(const std::string& rootfs) {
    struct statvfs fs {};
    suid_allowed = ::statvfs(rootfs.c_str(), &fs) == 0 && (fs.f_flag & ST_NOSUID);
    offence.clear();
    int walked = ::nftw(rootfs.c_str(), inspect, 32, FTW_PHYS | FTW_MOUNT);
    if (walked < 0) throw PolicyError("cannot examine the image " + rootfs + ": " + std::strerror(errno));
    if (!offence.empty())
        throw PolicyError("the image holds " + offence +
                          " (accepted: entries owned by root and writable by root alone, no device files, setuid "
                          "files only where the image's filesystem is mounted nosuid; the container gets its own "
                          "/tmp, /var/tmp and /dev, so the image's may be 0755)");
}

std::vector<Mount> check_mounts(std::vector<Mount> mounts, const config::ContainerConfig& config) {
    for (auto& mount : mounts) {
        mount.source = canonical_or_refuse(mount.source, "mount source");
        refuse_control(mount.source, "a mount source's resolved path");
        if (mount.source.find_first_of(",:") != std::string::npos)
            throw PolicyError("mount source resolves to '" + mount.source +
                              "', whose ',' or ':' a runtime's mount list would split (accepted: paths without them)");
        bool allowed = false;
        for (const auto& prefix : config.allowed_mounts) allowed = allowed || under(mount.source, prefix);
        if (!allowed)
            throw PolicyError("mount source '" + mount.source + "' is not under an allowed prefix (allowed_mounts in " +
                              config.origin + ": " +
                              (config.allowed_mounts.empty() ? "none" : joined(config.allowed_mounts)) + ")");
    }
    return mounts;
}

}  // namespace trellis::agent
