// SPDX-License-Identifier: Apache-2.0
// What an administrator allows ([container] allowed_images, allowed_mounts in trellis.toml)
// and what the user asked for, checked before anything starts: in srun, so that a refusal
// is on the user's terminal, and again on the node, where the container is made. Both run
// as the job's user: the kernel, not these checks, stops the user reaching further than
// their own permissions; these checks keep to the site's policy and keep the shared images
// safe from their users.
#pragma once

#include <sys/types.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "agent/image/reference.hpp"
#include "agent/container/mount_spec.hpp"
#include "common/error.hpp"

namespace trellis::agent {

// The site's policy or a security rule refuses an image or a mount (exit status 3).
struct PolicyError : Refused {
    using Refused::Refused;
};

// oci_bundle, sif, squashfs: a file or folder on the node, run as it is. registry and
// archive: imported into the user's node cache first (image_import), which gives a squashfs.
enum class ImageKind { oci_bundle, sif, squashfs, registry, archive };

// A file image (a .sqsh and its settings, or an archive) opened once, when it was checked:
// squashfuse, skopeo and the settings' reader use these descriptors, never the path again,
// so nothing renamed into its place afterwards is used.
struct ImageFiles {
    int image = -1;     // the .sqsh or the archive, read-only, close-on-exec
    int settings = -1;  // the .json beside a .sqsh; -1 when there is none
    ImageFiles() = default;
    ImageFiles(const ImageFiles&) = delete;
    ImageFiles& operator=(const ImageFiles&) = delete;
    ~ImageFiles();
};

struct CheckedImage {
    std::string path;  // canonical: symbolic links resolved before matching ("" for registry)
    ImageKind kind;
    ImageReference reference;  // as parsed (parse_image_reference)
    // A squashfs image's settings (Env, WorkingDir, Entrypoint, Cmd), as `skopeo inspect
    // --config` prints them, in the file beside it with ".json" for ".sqsh"; "" when none.
    std::string settings;
    std::shared_ptr<const ImageFiles> files;  // .sqsh files and archives: opened by the check
};

// Checks what --trellis-image names (parse_image_reference) against the site's policy; no
// network request is made. Throws PolicyError naming the setting that refuses it, the file it
// is in (config.origin) and what is accepted.
//  - docker:// references: the normalised "host[:port]/repository" must match an
//    allowed_registries entry (fnmatch, '*' not crossing '/'), or its host[:port] must be an
//    entry of its own. Kind registry, path "".
//  - OCI bundles and .sif files: must exist, and their canonical path must match
//    allowed_images, '*' not crossing '/'. The image and every folder above it must be root's
//    and writable by no one else (sticky folders such as /tmp excepted): no user can swap it
//    under another user's step.
//  - .sqsh files, oci-archive: and docker-archive: files: one matching allowed_images is an
//    administrator's and gets the bundles' ownership check; any other is the user's own and is
//    accepted only with allow_user_images = true, as a regular file the caller can read, owned
//    by the caller or root, in folders no other user may rename entries in (each folder on the
//    way the caller's or root's, and writable by others only when sticky, with the next one
//    on the way the caller's or root's). A .sqsh file's settings are the .json file beside it,
//    held to the same rule. The file and its settings are opened once, here (`files`), and
//    the checks are made on those descriptors.
CheckedImage check_image(const std::string& image, const config::ContainerConfig& config);

// Whether the registry of `reference` may be reached over plain HTTP or TLS that is not
// verified: its host[:port] is listed, exactly, in insecure_registries.
bool registry_is_insecure(const ImageReference& reference, const config::ContainerConfig& config);

// An OCI bundle's rootfs is shared by every user of the image and reachable on the host, so
// nothing in it may be changeable by a user or give privileges on the host: every entry
// root's, none writable by group or others (links aside), no device files, and setuid or
// setgid files only on a filesystem mounted nosuid. Throws PolicyError naming the first
// offending path and what is accepted.
void check_image_contents(const std::string& rootfs);

// Every source must exist and lie under an allowed prefix (whole path components, after
// resolving links), with no ',' ':' or control character in its resolved path (a runtime's
// list syntax would split it). Sources come back canonical. Throws PolicyError.
std::vector<Mount> check_mounts(std::vector<Mount> mounts, const config::ContainerConfig& config);

// Throws PolicyError unless `path` and the folders above it belong to root and only root may
// change them (a sticky folder may hold root's entries).
void check_root_owned(const std::string& path, const std::string& what);

}  // namespace trellis::agent
