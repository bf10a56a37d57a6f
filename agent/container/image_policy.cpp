#include "agent/container/image_policy.hpp"

#include <fnmatch.h>
#include <sys/stat.h>

#include <filesystem>

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

std::string canonical_or_refuse(const std::string& path, const std::string& what, std::optional<Identity> user) {
    try {
        return user ? canonical_path_as(*user, path) : fs::canonical(path).string();
    } catch (const std::exception& error) {
        throw PolicyError(what + " '" + path + "' does not exist or cannot be read" +
                          (user ? " by uid " + std::to_string(user->uid) : std::string()) + ": " + error.what());
    }
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

}  // namespace

void check_root_owned(const std::string& path, const std::string& what) {
    for (fs::path part = path;; part = part.parent_path()) {
        struct stat info {};
        if (::lstat(part.c_str(), &info) != 0) throw PolicyError(what + ": cannot examine " + part.string());
        bool writable_by_others = (info.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        bool sticky = (info.st_mode & S_ISVTX) != 0;
        if (S_ISLNK(info.st_mode) || info.st_uid != 0 || (writable_by_others && !(sticky && part != path)))
            throw PolicyError(what + " '" + path + "' runs as root, so " + part.string() +
                              " must belong to root and be writable by root alone");
        if (part == part.parent_path()) return;
    }
}

CheckedImage check_image(const std::string& image, const ContainerConfig& config, std::optional<Identity> user) {
    if (image.empty() || image[0] != '/') throw PolicyError("image '" + image + "' is not an absolute path");
    if (has_dot_dot(image)) throw PolicyError("image '" + image + "': '..' is not accepted in an image path");
    CheckedImage checked{canonical_or_refuse(image, "image", user), ImageKind::oci_bundle};
    std::error_code error;
    if (fs::is_directory(checked.path, error)) {
        if (!fs::is_directory(fs::path(checked.path) / "rootfs", error))
            throw PolicyError("image '" + image + "' is a folder without rootfs/: not an OCI bundle");
    } else if (checked.path.ends_with(".sif") && fs::is_regular_file(checked.path, error)) {
        checked.kind = ImageKind::sif;
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
    if (checked.kind == ImageKind::oci_bundle) check_root_owned(checked.path + "/rootfs", "OCI bundle");
    return checked;
}

std::vector<Mount> check_mounts(std::vector<Mount> mounts, const ContainerConfig& config, std::optional<Identity> user) {
    for (auto& mount : mounts) {
        mount.source = canonical_or_refuse(mount.source, "mount source", user);
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
