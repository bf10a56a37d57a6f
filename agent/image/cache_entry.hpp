// SPDX-License-Identifier: Apache-2.0
// One image's place in the cache while it is imported, as an object: the digest's lock, held
// exclusively while it lives; the import's temporary folder <hex>.tmp, where everything is
// made; and the publish step, two renames after the data is on disk, the settings first, so
// that whoever finds <hex>.sqsh finds its <hex>.json and a crash leaves the old state or the
// new, never a cut image under its final name. Not finalized, it takes its temporaries with it.
#pragma once

#include <string>

#include "agent/image/cache.hpp"

namespace trellis::agent {

class CacheEntry {
public:
    // The image's files in the temporary folder, as finalize() takes them.
    static constexpr const char* image_file = "image.sqsh";
    static constexpr const char* settings_file = "settings.json";

    // Waits for the digest's lock (exclusive) and removes what an import that died left.
    CacheEntry(const ImageCache& cache, const std::string& digest);
    ~CacheEntry();
    CacheEntry(const CacheEntry&) = delete;
    CacheEntry& operator=(const CacheEntry&) = delete;

    // Whether the image is published (its .sqsh and .json are there).
    bool exists() const { return cache_.has(digest_); }
    // Makes the temporary folder (0700). Throws ImageImportError, naming a full disk as such.
    void make_tmp() const;
    // `name` in the temporary folder, relative to the cache ("<hex>.tmp/NAME"), and as a path.
    std::string tmp_name(const std::string& name) const { return hex_ + ".tmp/" + name; }
    std::string tmp_path(const std::string& name) const { return cache_.path(tmp_name(name)); }
    // Publishes the temporary folder's image_file and settings_file as <hex>.sqsh and
    // <hex>.json. Throws ImageImportError; the temporaries stay for clean_tmp().
    void finalize();
    // Removes <hex>.tmp and whatever else of this digest's temporaries is there.
    void clean_tmp() const { cache_.remove_temporaries(digest_); }

private:
    const ImageCache& cache_;
    std::string digest_, hex_;
    CacheLock lock_;
    bool finalized_ = false;
};

}  // namespace trellis::agent
