// What an administrator allows ([container] allowed_images, allowed_mounts in trellis.toml)
// and what the user asked for, checked before anything starts: in srun, so that a refusal
// is on the user's terminal, and again on the node by the agent, which runs as root.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/command.hpp"
#include "agent/config.hpp"
#include "agent/container/mount_spec.hpp"

namespace trellis::agent {

struct PolicyError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class ImageKind { oci_bundle, sif };

struct CheckedImage {
    std::string path;  // canonical: symbolic links resolved before matching
    ImageKind kind;
};

// The image must exist, be an OCI bundle (a folder with rootfs/) or a .sif file, and its
// canonical path (links resolved, as `user` when given: root must not reach further than the
// user can) must match one of the allowed patterns, '*' not crossing '/'. An OCI bundle runs
// through runc as root, so its folder and every folder above it must be root's and writable
// by no one else (sticky folders such as /tmp excepted): nobody can swap it after the check.
// Throws PolicyError saying which and why.
CheckedImage check_image(const std::string& image, const ContainerConfig& config,
                         std::optional<Identity> user = std::nullopt);

// Every source must exist for `user` and lie under an allowed prefix (whole path components,
// after resolving links). Sources come back canonical. Throws PolicyError.
std::vector<Mount> check_mounts(std::vector<Mount> mounts, const ContainerConfig& config,
                                std::optional<Identity> user = std::nullopt);

// Throws PolicyError unless `path` and the folders above it belong to root and only root may
// change them (a sticky folder may hold root's entries).
void check_root_owned(const std::string& path, const std::string& what);

}  // namespace trellis::agent
