// SPDX-License-Identifier: Apache-2.0
#include "agent/image/import.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/command.hpp"
#include "agent/image/elapsed.hpp"
#include "agent/files.hpp"
#include "agent/image/broadcast.hpp"
#include "agent/image/cache_entry.hpp"
#include "agent/image/cache.hpp"
#include "agent/image/policy.hpp"
#include "agent/image/import_tool.hpp"
#include "agent/image/skopeo.hpp"

namespace trellis::agent {

namespace {

using Clock = std::chrono::steady_clock;

// Where skopeo works on `image`: its temporaries in `tmpdir`; an archive read from the
// descriptor the check opened, writing only there and in `writable`.
SkopeoScratch scratch_for(const CheckedImage& image, const std::string& tmpdir,
                          std::vector<std::string> writable = {}) {
    SkopeoScratch scratch{tmpdir};
    if (image.kind == ImageKind::archive) {
        scratch.archive = image.files->image;
        scratch.writable = std::move(writable);
    }
    return scratch;
}

// "1.23 s": progress lines are read by people.
std::string in_seconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", seconds);
    return text;
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
    std::string low = lower(text);
    return std::any_of(words.begin(), words.end(), [&](const char* w) { return low.find(w) != std::string::npos; });
}

[[noreturn]] void cache_full(const std::string& folder, const std::string& step) {
    throw ImageImportError("the image cache " + folder + " is full (no space left on device) while " + step +
                           "; nothing of this import was kept (free space there, or ask the administrator about "
                           "image_cache and image_cache_gib)");
}

[[noreturn]] void fail_tool(const std::string& step, const Finished& result, const std::string& folder) {
    if (mentions(result.err, {"no space left on device"}) || mentions(result.out, {"no space left on device"}))
        cache_full(folder, step);
    // A Go program's panic: its first line, not the trace (umoci panics on a full disk).
    if (auto panic = result.err.find("panic: "); panic != std::string::npos)
        throw ImageImportError(step + " failed: the program stopped with \"" +
                               result.err.substr(panic, result.err.find('\n', panic) - panic) + "\"" +
                               " (is the image cache " + folder + " full?)");
    throw ImageImportError(step + " failed (status " + std::to_string(result.status) + "): " + result.err);
}

// The manifest digest: the one pinned, else that of the manifest the registry (or the archive)
// gives now, asked with its temporaries in a folder of this process's.
std::string resolve_digest(const CheckedImage& image, const Skopeo& skopeo, const ImageCache& cache) {
    const ImageReference& reference = image.reference;
    if (reference.kind == ReferenceKind::registry && !reference.digest.empty()) return reference.digest;
    std::string temporary = ImageCache::inspection_name(::getpid());
    if (::mkdirat(cache.fd(), temporary.c_str(), 0700) != 0 && errno != EEXIST)
        throw ImageImportError("cannot make " + cache.path(temporary) + ": " + std::strerror(errno));
    try {
        std::string digest = skopeo.manifest_digest(reference, scratch_for(image, cache.path(temporary)));
        remove_tree(cache.path(temporary));
        return digest;
    } catch (const RegistryError& error) {
        remove_tree(cache.path(temporary));
        if (error.failure == SkopeoFailure::no_space) cache_full(cache.folder(), "looking up " + reference.text());
        throw;
    } catch (...) {
        remove_tree(cache.path(temporary));
        throw;
    }
}

// Writes `text` as the file `name` in the folder `dir`, reporting a full disk as such.
void write_file_at(int dir, const std::string& name, const std::string& text, const std::string& folder) {
    int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
    int error = errno;
    if (fd >= 0) ::close(fd);
    if (!ok)
        throw ImageImportError(
            "cannot write " + folder + "/" + name + ": " + std::strerror(error) +
            (error == ENOSPC ? " (the image cache " + folder + " is full; nothing of this import was kept)" : ""));
}

std::uint64_t folder_bytes(const std::string& path) {
    std::uint64_t total = 0;
    std::error_code error;
    for (auto it = std::filesystem::recursive_directory_iterator(path, error);
         !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error))
        if (it->is_regular_file(error)) total += it->file_size(error);
    return total;
}

// Before skopeo writes the blob layout (its lock held exclusively): blobs a killed skopeo
// was writing (oci-put-blob*: no other writer runs) go, and an index.json that does not parse
// (skopeo rewrites it in place, so a kill or a full disk can cut it) is put aside, so that
// skopeo starts a new one; its blobs stay until the next clean-up. Returns what it did.
std::string repair_layout(const ImageCache& cache) {
    Fd layout(::openat(cache.fd(), "oci", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!layout) return "";
    std::vector<std::string> stale;
    for_each_entry(layout.get(), [&](const std::string& name) {
        if (name.starts_with("oci-put-blob")) stale.push_back(name);
    });
    for (const auto& name : stale) ::unlinkat(layout.get(), name.c_str(), 0);
    std::string note;
    if (Fd index(::openat(layout.get(), "index.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)); index) {
        std::string text = read_bounded(index.get(), image_json_limit);
        if (!nlohmann::json::accept(text)) {
            std::string aside = "index.json.damaged-" + std::to_string(std::time(nullptr));
            if (::renameat(layout.get(), "index.json", layout.get(), aside.c_str()) == 0)
                note = cache.path("oci/index.json") + " did not parse (" + std::to_string(text.size()) +
                       " bytes; an import was cut short): put aside as " + aside + ", and a new one started";
        }
    }
    if (!stale.empty())
        note += (note.empty() ? "" : "; ") + std::string("removed ") + std::to_string(stale.size()) +
                " blob(s) a killed import was writing";
    return note;
}

// The import proper, with the digest's lock held and no published image: everything it makes
// is inside <hex>.tmp/ until the two renames. The tools get paths, not descriptors: the
// folder they lead through was checked to be the user's own, in a root-owned sticky folder,
// so only the user (whose rights they run with) or root could swap it.
void import_into(const ImageCache& cache, CacheEntry& entry, const CheckedImage& image, const std::string& digest,
                 const config::ContainerConfig& config, const Skopeo& skopeo, std::ostream& progress) {
    const ImageReference& reference = image.reference;
    std::string hex = ImageCache::entry_name(digest, "");
    std::string folder = cache.folder();
    entry.make_tmp();
    std::string temporary = entry.tmp_path("");
    temporary.pop_back();  // the folder itself, for the tools' TMPDIR
    ImageReference source = reference.kind == ReferenceKind::registry ? reference.pinned(digest) : reference;
    std::string layout = "oci:" + cache.path("oci") + ":" + hex;

    auto start = Clock::now();
    {
        CacheLock writing = cache.lock_layout(true);
        if (::mkdirat(cache.fd(), "oci", 0700) != 0 && errno != EEXIST)
            throw ImageImportError("cannot make " + cache.path("oci") + ": " + std::strerror(errno) +
                                   (errno == ENOSPC ? " (the image cache " + folder + " is full)" : ""));
        if (auto note = repair_layout(cache); !note.empty()) progress << "trellis-agent: " << note << '\n';
        std::uint64_t before = folder_bytes(cache.path("oci"));
        progress << "trellis-agent: fetching " << source.text() << '\n' << std::flush;
        // skopeo's own lines (each blob copied, or skipped as already there) are the progress.
        Finished copied = skopeo.copy(source, layout, scratch_for(image, temporary, {cache.path("oci")}),
                                      [&progress](const std::string& line) {
                                          progress << "trellis-agent:   " << line << '\n' << std::flush;
                                      });
        if (copied.status != 0 && classify_skopeo(copied.status, copied.err) == SkopeoFailure::no_space)
            cache_full(folder, "fetching " + reference.text());
        if (copied.status != 0) skopeo.registry_failure(source, "fetching", copied);
        std::uint64_t fetched = folder_bytes(cache.path("oci")) - before;
        progress << "trellis-agent: fetched " << fetched << " bytes of new blobs in "
                 << in_seconds(seconds_since(start)) << '\n'
                 << std::flush;
    }
    auto step = Clock::now();
    std::string bundle = entry.tmp_path("bundle");
    {
        CacheLock reading = cache.lock_layout(false);
        Finished unpacked = run_tool(
            {config.umoci, "unpack", "--rootless", "--image", cache.path("oci") + ":" + hex, bundle}, temporary);
        if (unpacked.status != 0) fail_tool("umoci unpack of " + source.text(), unpacked, folder);
        Finished settings = skopeo.inspect_config(layout, {temporary});
        if (settings.status != 0) fail_tool("skopeo inspect --config of " + source.text(), settings, folder);
        if (settings.truncated)
            throw ImageImportError("the configuration of " + source.text() + " is too large (skopeo reads at most " +
                                   std::to_string(image_json_limit >> 20) + " MiB)");
        write_file_at(cache.fd(), entry.tmp_name(CacheEntry::settings_file), settings.out, folder);
    }
    progress << "trellis-agent: unpacked in " << in_seconds(seconds_since(step)) << '\n' << std::flush;
    // No setuid or setgid file in a cached image: trellis mounts it nosuid, but a cache file
    // mounted some other way (an administrator's loop mount) must not give root's rights.
    // As the namespace's root, which may enter the image's mode-000 folders.
    std::string find = find_program("find");
    Finished cleared = run_tool({find.empty() ? "/usr/bin/find" : find, bundle + "/rootfs", "-perm", "/6000", "!",
                                 "-type", "l", "-exec", "chmod", "ug-s", "{}", "+"},
                                temporary, true);
    if (cleared.status != 0) fail_tool("clearing the setuid and setgid bits of " + source.text(), cleared, folder);
    step = Clock::now();
    std::string packed = entry.tmp_path(CacheEntry::image_file);
    // zstd at level 3: as small as the default gzip, packed about 20 times faster (0.5 s
    // against 9 s for the trainer's 94 MB image here).
    Finished squashed =
        run_tool({config.mksquashfs, bundle + "/rootfs", packed, "-noappend", "-reproducible", "-mkfs-time", "0",
                  "-all-time", "0", "-all-root", "-no-progress", "-quiet", "-comp", "zstd", "-Xcompression-level", "3"},
                 temporary, true);
    if (squashed.status != 0) fail_tool("mksquashfs of " + source.text(), squashed, folder);
    struct stat info {};
    ::fstatat(cache.fd(), entry.tmp_name(CacheEntry::image_file).c_str(), &info, 0);
    progress << "trellis-agent: packed " << info.st_size << " bytes of squashfs in " << in_seconds(seconds_since(step))
             << '\n'
             << std::flush;
    entry.finalize();
}

// Evicts least recently used images until the user's folder takes at most image_cache_gib,
// removing their tags from the blob layout and its blobs no image left there needs.
// Untags `hex` (when tagged) and removes the blobs no tag needs, with the layout's lock held
// exclusively. Returns what failed, or "".
std::string clean_layout(const ImageCache& cache, const config::ContainerConfig& config, const std::string& hex) {
    std::string layout = cache.path("oci");
    struct stat info {};
    if (::fstatat(cache.fd(), "oci/oci-layout", &info, AT_SYMLINK_NOFOLLOW) != 0) return "";  // no layout yet
    std::string failed;
    if (!hex.empty()) {
        Finished untagged = run_tool({config.umoci, "rm", "--image", layout + ":" + hex}, cache.folder());
        if (untagged.status != 0 && !mentions(untagged.err, {"not found", "no such", "does not exist"}))
            failed += untagged.err;
    }
    Finished cleaned = run_tool({config.umoci, "gc", "--layout", layout}, cache.folder());
    if (cleaned.status != 0) failed += (failed.empty() ? "" : "; ") + cleaned.err;
    return failed;
}

// Evicts least recently used images until the user's folder takes at most image_cache_gib,
// removing their tags from the blob layout and its blobs no image left there needs; with no
// image left to evict, only the blobs no image needs.
void trim(const ImageCache& cache, const config::ContainerConfig& config, const std::string& keep,
          std::ostream& progress) {
    std::uint64_t limit = std::uint64_t(config.image_cache_gib) << 30;
    for (std::uint64_t taken = cache.bytes(); taken > limit; taken = cache.bytes()) {
        std::string evicted = cache.evict_oldest(keep);
        CacheLock writing = cache.lock_layout(true);
        std::string failed = clean_layout(cache, config, evicted.empty() ? "" : ImageCache::entry_name(evicted, ""));
        if (!evicted.empty())
            progress << "trellis-agent: evicted " << evicted << " (least recently used; the cache took "
                     << (taken >> 20) << " MiB, image_cache_gib is " << config.image_cache_gib << ")\n";
        if (!failed.empty())
            progress << "trellis-agent: warning: cleaning the blobs" << (evicted.empty() ? "" : " of " + evicted)
                     << " from " << cache.path("oci") << " failed: " << failed << '\n';
        if (evicted.empty()) break;
    }
}

// After a failed or killed import: its tag and the blobs only it fetched leave the layout,
// so that nothing of it counts against image_cache_gib. The error says whether that held.
std::string forget_import(const ImageCache& cache, const config::ContainerConfig& config, const std::string& digest,
                          const std::string& what) {
    cache.remove_temporaries(digest);
    std::string failed;
    {
        CacheLock writing = cache.lock_layout(true);
        failed = clean_layout(cache, config, ImageCache::entry_name(digest, ""));
    }
    std::string message = what;
    if (!failed.empty()) {
        for (const char* claim : {"; nothing of this import was kept"})
            if (auto at = message.find(claim); at != std::string::npos) message.erase(at, std::strlen(claim));
        message += " (removing its blobs from " + cache.path("oci") + " failed too: " + failed + ")";
    }
    return message;
}

}  // namespace

ImportedImage import_image(const CheckedImage& checked, const config::ContainerConfig& config, std::ostream& progress,
                           const ImportPlace& place) {
    auto start = Clock::now();
    const ImageReference& reference = checked.reference;
    if (checked.kind != ImageKind::registry && checked.kind != ImageKind::archive)
        throw UsageError("'" + reference.path +
                         "' is a file on the node, not an image to import (accepted: "
                         "docker://HOST/REPOSITORY[:TAG|@sha256:DIGEST], oci-archive:PATH, docker-archive:PATH)");
    Skopeo skopeo(config);
    require_tool(config.umoci, "umoci");
    require_tool(config.mksquashfs, "mksquashfs");
    ImageCache cache = place.folder.empty() ? ImageCache(config, progress) : ImageCache::own_folder(place.folder);
    cache.remove_dead_inspections();

    ImportedImage image;
    image.digest = resolve_digest(checked, skopeo, cache);
    image.squashfs = cache.path(ImageCache::entry_name(image.digest, ".sqsh"));
    image.settings = cache.path(ImageCache::entry_name(image.digest, ".json"));
    image.cached = true;
    // Held shared from the moment the image is found until the caller is done with it, so
    // that no other import evicts it in between. An import takes the lock exclusively and
    // lets it go before this one takes it shared; an eviction in that gap sends it round again.
    for (;;) {
        image.in_use = cache.lock(image.digest, false);
        if (cache.has(image.digest) && cache.damage(image.digest).empty()) break;
        image.in_use = CacheLock();
        CacheEntry entry(cache, image.digest);
        if (entry.exists()) {
            std::string damage = cache.damage(image.digest);
            if (damage.empty()) continue;  // another process imported it while this one waited
            progress << "trellis-agent: the cached " << image.squashfs << " is damaged (" << damage
                     << "): removed, and imported again\n";
            cache.remove_image(image.digest);
        }
        try {
            if (received_image(cache, entry, image.digest, place.sent)) {
                image.received = true;
                continue;
            }
        } catch (const ImageImportError& error) {
            progress << "trellis-agent: " << error.what() << ": importing it here\n";
        }
        image.cached = image.received = false;
        try {
            import_into(cache, entry, checked, image.digest, config, skopeo, progress);
        } catch (const ImageImportError& error) {
            throw ImageImportError(forget_import(cache, config, image.digest, error.what()));
        } catch (const RegistryError& error) {
            throw RegistryError(forget_import(cache, config, image.digest, error.what()), error.failure);
        }
    }
    remove_sent_files(cache, image.digest, place.sent);
    cache.touch(image.digest);
    trim(cache, config, image.digest, progress);
    image.seconds = seconds_since(start);
    progress << "trellis-agent: "
             << (image.received ? "received "
                 : image.cached ? "found "
                                : "imported ")
             << reference.text() << " as " << image.digest << " in " << in_seconds(image.seconds) << '\n'
             << std::flush;
    return image;
}

}  // namespace trellis::agent
