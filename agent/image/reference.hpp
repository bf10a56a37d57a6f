// SPDX-License-Identifier: Apache-2.0
// What `--trellis-image` names, parsed before any policy check: a path on the node (an OCI
// bundle folder, a .sif or a .sqsh file), an image in a registry, or an image archive.
//   docker://[HOST[:PORT]/]REPOSITORY[:TAG|@sha256:DIGEST]
//     a first component with '.' or ':' in it, or "localhost", is the registry; else the
//     image is Docker Hub's (docker.io), and a one-word repository is library/NAME there;
//     no tag and no digest means the tag "latest"
//   oci-archive:PATH, docker-archive:PATH   a tar file of one image (skopeo's transports)
//   PATH                                     absolute: a bundle folder, NAME.sif or NAME.sqsh
#pragma once

#include <cstddef>
#include <string>

namespace trellis::agent {

enum class ReferenceKind { path, registry, oci_archive, docker_archive };

struct ImageReference {
    ReferenceKind kind = ReferenceKind::path;
    std::string host;        // registry: "docker.io", "127.0.0.1:5000"
    std::string repository;  // registry: "library/busybox"
    std::string tag;         // registry: "latest" when neither tag nor digest was given; "" with a digest
    std::string digest;      // registry: "sha256:<64 hex digits>" when pinned, else ""
    std::string path;        // path and archives: absolute, as given

    // "host[:port]/repository": what allowed_registries patterns match.
    std::string registry_path() const;
    // The reference in its normal form (docker://docker.io/library/busybox:latest,
    // oci-archive:PATH), which is also how skopeo takes it.
    std::string text() const;
    // The same image pinned to `manifest_digest` (docker://HOST/REPO@sha256:...).
    ImageReference pinned(const std::string& manifest_digest) const;
    bool is_squashfs_file() const;  // a path ending in .sqsh
};

// The most a manifest or an image configuration may take, as skopeo reads them (4 MiB each).
// What skopeo prints of either (indented) is read up to twice that.
constexpr std::size_t image_json_limit = 4u << 20;

// Throws UsageError naming what was wrong and the accepted forms.
ImageReference parse_image_reference(const std::string& text);

// "sha256:" and 64 lowercase hex digits.
bool is_manifest_digest(const std::string& text);

}  // namespace trellis::agent
