// SPDX-License-Identifier: Apache-2.0
// Importing an image as the job's user into their node cache (cache.hpp): a registry
// image (docker://, normally pinned @sha256: by srun) or an image archive (oci-archive:,
// docker-archive:) becomes one squashfs and its settings file, keyed by manifest digest.
//   skopeo copy     into the user's OCI layout in the cache (blobs already there are not
//                   fetched again)
//   umoci unpack    --rootless, into a temporary folder in the cache (whiteouts applied,
//                   modes kept, every file the user's)
//   mksquashfs      in a user namespace where the user is root, so that a mode-000 file is
//                   read, not packed empty; reproducible, every file root's in the image
//   skopeo inspect  --config of the same image: the settings file
// then both are renamed into place, settings first. One import per node and digest: a
// second asker waits on the digest's lock and finds the image there.
#pragma once

#include <ostream>
#include <string>

#include "config/config.hpp"
#include "agent/image/cache.hpp"
#include "agent/image/policy.hpp"

namespace trellis::agent {

struct ImportedImage {
    std::string squashfs;   // <image_cache>/<uid>/<hex>.sqsh
    std::string settings;   // the same with .json: the image's settings (skopeo inspect --config)
    std::string digest;     // "sha256:<hex>": the manifest digest
    bool cached = false;    // found in the cache, nothing fetched
    bool received = false;  // sent by srun for this step (broadcast.hpp), nothing fetched
    double seconds = 0;     // the whole import, for the verbose report
    // A shared lock on the image, held while this object lives: keep it while the image is
    // used (mounted), and no eviction removes it meanwhile.
    CacheLock in_use;
};

struct ImportPlace {
    // A folder of the caller's instead of the node cache's user folder (srun's host, which
    // sends the image to the nodes: broadcast.hpp).
    std::string folder;
    // "JOB.STEP": the step whose sent image (broadcast.hpp) is taken when it is there.
    std::string sent;
};

// Imports `image` (checked by check_image: kind registry or archive, an archive read from the
// descriptor the check opened) unless the cache has it already (whole: a damaged one is
// removed and imported again) or srun sent it for this step, writing progress lines (what is fetched, bytes, seconds) on `progress`. A tag is
// resolved to its digest here (`skopeo inspect`); an archive's key is the manifest digest
// skopeo reports for it. Throws PolicyError (the cache or root refused), UsageError (a path
// reference), RegistryError (skopeo missing, unauthorized, unknown image, registry
// unreachable), ImageImportError (a tool missing, the cache full): nothing half-written is left.
ImportedImage import_image(const CheckedImage& image, const config::ContainerConfig& config, std::ostream& progress,
                           const ImportPlace& place = {});

}  // namespace trellis::agent
