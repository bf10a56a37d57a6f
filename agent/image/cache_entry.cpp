// SPDX-License-Identifier: Apache-2.0
#include "agent/image/cache_entry.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/files.hpp"

namespace trellis::agent {

CacheEntry::CacheEntry(const ImageCache& cache, const std::string& digest)
    : cache_(cache), digest_(digest), hex_(ImageCache::entry_name(digest, "")), lock_(cache.lock(digest, true)) {
    clean_tmp();
}

CacheEntry::~CacheEntry() {
    if (!finalized_) clean_tmp();
}

void CacheEntry::make_tmp() const {
    if (::mkdirat(cache_.fd(), (hex_ + ".tmp").c_str(), 0700) != 0)
        throw ImageImportError("cannot make " + cache_.path(hex_ + ".tmp") + ": " + std::strerror(errno) +
                               (errno == ENOSPC ? " (the image cache " + cache_.folder() + " is full)" : ""));
}

void CacheEntry::finalize() {
    int folder = cache_.fd();
    for (const char* name : {settings_file, image_file}) {
        Fd file(::openat(folder, tmp_name(name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (!file || ::fsync(file.get()) != 0)
            throw ImageImportError("cannot publish " + tmp_path(name) + ": " + std::strerror(errno));
    }
    if (::renameat(folder, tmp_name(settings_file).c_str(), folder, (hex_ + ".json").c_str()) != 0 ||
        ::renameat(folder, tmp_name(image_file).c_str(), folder, (hex_ + ".sqsh").c_str()) != 0 || ::fsync(folder) != 0)
        throw ImageImportError("cannot publish " + cache_.path(hex_ + ".sqsh") + ": " + std::strerror(errno));
    finalized_ = true;
    clean_tmp();
}

}  // namespace trellis::agent
