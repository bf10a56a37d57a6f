#include "agent/container/image_policy.hpp"

#include <fnmatch.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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
              " on the host (mode " + std::to_string((info->st_mode >> 6 & 7) * 100 + (info->st_mode >> 3 & 7) * 10 +
                                                     (info->st_mode & 7)) +
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

CheckedImage check_image(const std::string& image, const config::ContainerConfig& config) {
    refuse_control(image, "the image path");
    if (image.empty() || image[0] != '/') throw PolicyError("image '" + image + "' is not an absolute path");
    if (image.find_first_of(",:") != std::string::npos)
        throw PolicyError("image '" + image + "' holds ',' or ':', which a runtime's lists would split (accepted: "
                          "paths without them)");
    if (has_dot_dot(image)) throw PolicyError("image '" + image + "': '..' is not accepted in an image path");
    CheckedImage checked{canonical_or_refuse(image, "image"), ImageKind::oci_bundle, {}, {}};
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
    } else if (checked.path.ends_with(".sqsh") && fs::is_regular_file(checked.path, error)) {
        // squashfs (running it): a root-owned .sqsh matched by allowed_images, its settings
        // beside it. The policy's own rules for user-owned images replace this branch.
        checked.kind = ImageKind::squashfs;
        checked.settings = checked.path.substr(0, checked.path.size() - 5) + ".json";
    } else {
        throw PolicyError("image '" + image + "' is neither an OCI bundle (a folder with rootfs/) nor a .sif file");
    }
    bool allowed = false;
    for (const auto& pattern : config.allowed_images)
        allowed = allowed || ::fnmatch(pattern.c_str(), checked.path.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0;
    if (!allowed)
        throw PolicyError("image '" + checked.path + "' is not allowed on this cluster (allowed_images in " +
                          config.origin + ": " +
                          (config.allowed_images.empty() ? "none" : joined(config.allowed_images)) + ")");
    check_root_owned(checked.kind == ImageKind::oci_bundle ? checked.path + "/rootfs" : checked.path,
                     checked.kind == ImageKind::oci_bundle ? "OCI bundle" : "image");
    return checked;
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
