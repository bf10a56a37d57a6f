#include "agent/container/image_import.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
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
#include "agent/container/image_cache.hpp"
#include "agent/container/image_policy.hpp"
#include "agent/container/import_tool.hpp"

namespace trellis::agent {

namespace {

using Clock = std::chrono::steady_clock;

// A tool run in the cache (its TMPDIR there); its stdout as progress when `progress` is given.
ToolResult run_in(const std::string& tmpdir, std::vector<std::string> argv, std::ostream* progress = nullptr,
                  bool as_namespace_root = false) {
    ToolRun run;
    run.argv = std::move(argv);
    run.tmpdir = tmpdir;
    run.as_namespace_root = as_namespace_root;
    run.progress = progress;
    run.progress_prefix = "trellis-agent:   ";
    return run_tool(run);
}

// Where skopeo reads an image from. An archive is read from the descriptor the check opened
// (fd 3 in skopeo), in a namespace where only `writable` (its temporary folder, and the blob
// layout for a copy) can be written: skopeo unpacks an archive following links of its earlier
// entries, so a crafted one could otherwise write wherever the user can.
struct SkopeoSource {
    const CheckedImage& image;
    std::vector<std::string> writable;
};

// skopeo (global options first: its temporaries in `tmpdir`, never the user's
// ~/.config/containers) reading `source`.
ToolResult run_skopeo(const config::ContainerConfig& config, const std::string& tmpdir, std::vector<std::string> args,
                      const SkopeoSource& source, std::ostream* progress = nullptr) {
    ToolRun run;
    run.argv = {config.skopeo, "--tmpdir", tmpdir};
    run.argv.insert(run.argv.end(), args.begin(), args.end());
    run.tmpdir = tmpdir;
    run.home = "/nonexistent";
    run.progress = progress;
    run.progress_prefix = "trellis-agent:   ";
    if (source.image.kind == ImageKind::archive) {
        run.fd3 = source.image.files->image;
        run.writable_only = source.writable;
        run.writable_only.push_back(tmpdir);
    }
    return run_tool(run);
}

// The image as skopeo names it: an archive by its descriptor.
std::string skopeo_name(const CheckedImage& image, const std::string& digest = "") {
    ImageReference reference = image.reference;
    if (image.kind == ImageKind::archive) reference.path = "/dev/fd/3";
    else if (!digest.empty()) reference = reference.pinned(digest);
    return reference.skopeo_source();
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

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

// The user's registry credentials: $REGISTRY_AUTH_FILE, else ~/.config/containers/auth.json;
// "" when neither file is there. Only its path is given to skopeo, which reads it as the user.
std::string auth_file() {
    if (const char* named = std::getenv("REGISTRY_AUTH_FILE"); named && *named) return named;
    const char* home = std::getenv("HOME");
    std::string folder = home && *home ? home : "";
    if (folder.empty())
        if (passwd* entry = ::getpwuid(::getuid())) folder = entry->pw_dir;
    std::string path = folder + "/.config/containers/auth.json";
    return !folder.empty() && ::access(path.c_str(), R_OK) == 0 ? path : "";
}

std::string where_credentials_come_from(const std::string& used) {
    return "credentials are read from $REGISTRY_AUTH_FILE, else ~/.config/containers/auth.json (" +
           (used.empty() ? std::string("neither is there") : "used: " + used) + "); `skopeo login --authfile FILE HOST` writes one";
}

// What went wrong with a registry, in words the user can act on, from skopeo's stderr.
[[noreturn]] void fail_registry(const ImageReference& reference, const std::string& step, const ToolResult& result,
                                const std::string& credentials, const std::string& folder) {
    std::string what = reference.text();
    const std::string& said = result.error;
    if (mentions(said, {"no space left on device"}))
        throw ImageImportError("the image cache " + folder + " is full (no space left on device) while " + step + " " +
                               what + "; nothing of this import was kept (free space there, or ask the administrator "
                               "about image_cache and image_cache_gib)");
    // An archive has no registry to blame: skopeo's words as they are.
    if (reference.kind != ReferenceKind::registry)
        throw ImageImportError(step + " " + what + " failed (status " + std::to_string(result.status) + "): " + said);
    if (mentions(said, {"unauthorized", "authentication required", "denied"}))
        throw ImageImportError("the registry refused " + what + " (unauthorized): " + where_credentials_come_from(credentials));
    if (mentions(said, {"manifest unknown", "name unknown", "not found"}))
        throw ImageImportError("the registry has no image " + what + " (unknown tag, digest or repository)");
    if (mentions(said, {"http response to https client"}))
        throw ImageImportError("the registry " + reference.host + " answers in plain HTTP; it is reached so only when "
                               "[container] insecure_registries lists \"" + reference.host + "\"");
    if (mentions(said, {"connection refused", "no such host", "i/o timeout", "network is unreachable",
                        "no route to host", "connection reset", "tls handshake timeout"}))
        throw ImageImportError("the registry " + reference.host + " cannot be reached for " + what + ": " + said);
    throw ImageImportError(step + " " + what + " failed (status " + std::to_string(result.status) + "): " + said);
}

[[noreturn]] void fail_tool(const std::string& step, const ToolResult& result, const std::string& folder) {
    if (mentions(result.error, {"no space left on device"}) || mentions(result.out, {"no space left on device"}))
        throw ImageImportError("the image cache " + folder + " is full (no space left on device) while " + step +
                               "; nothing of this import was kept (free space there, or ask the administrator about "
                               "image_cache and image_cache_gib)");
    // A Go program's panic: its first line, not the trace (umoci panics on a full disk).
    if (auto panic = result.error.find("panic: "); panic != std::string::npos)
        throw ImageImportError(step + " failed: the program stopped with \"" +
                               result.error.substr(panic, result.error.find('\n', panic) - panic) + "\"" +
                               " (is the image cache " + folder + " full?)");
    throw ImageImportError(step + " failed (status " + std::to_string(result.status) + "): " + result.error);
}

// Options every skopeo call to the registry takes: credentials and, for a listed registry,
// HTTP or unverified TLS.
std::vector<std::string> registry_options(const ImageReference& reference, const config::ContainerConfig& config,
                                          const std::string& credentials, const char* prefix) {
    std::vector<std::string> options;
    if (reference.kind != ReferenceKind::registry) return options;
    if (!credentials.empty()) options.push_back(std::string("--") + prefix + "authfile=" + credentials);
    // Always said: a registries.conf entry may not turn verification off.
    options.push_back(std::string("--") + prefix + "tls-verify=" + (registry_is_insecure(reference, config) ? "false" : "true"));
    return options;
}

// The manifest digest: the one pinned, else that of the manifest the registry (or the archive)
// gives now. Only the manifest is asked for (`inspect --raw`, no tag list, no configuration
// blob), and skopeo's own manifest-digest hashes it as registries do.
std::string resolve_digest(const CheckedImage& image, const config::ContainerConfig& config,
                           const std::string& credentials, const ImageCache& cache) {
    const ImageReference& reference = image.reference;
    if (reference.kind == ReferenceKind::registry && !reference.digest.empty()) return reference.digest;
    std::vector<std::string> args = {"inspect", "--raw", "--no-tags"};
    for (auto& o : registry_options(reference, config, credentials, "")) args.push_back(o);
    args.push_back(skopeo_name(image));
    std::string temporary = ImageCache::inspection_name(::getpid());
    if (::mkdirat(cache.fd(), temporary.c_str(), 0700) != 0 && errno != EEXIST)
        throw ImageImportError("cannot make " + cache.path(temporary) + ": " + std::strerror(errno));
    ToolResult manifest = run_skopeo(config, cache.path(temporary), args, {image, {}});
    remove_tree(cache.path(temporary));
    if (manifest.status != 0) fail_registry(reference, "looking up", manifest, credentials, cache.folder());
    if (manifest.truncated)
        throw ImageImportError("the manifest of " + reference.text() + " is too large (skopeo reads at most " +
                               std::to_string(image_json_limit >> 20) + " MiB)");
    ToolRun hashing;
    hashing.argv = {config.skopeo, "manifest-digest", "/dev/stdin"};
    hashing.input = manifest.out;
    ToolResult hashed = run_tool(hashing);
    std::string digest = hashed.out;
    while (!digest.empty() && std::isspace((unsigned char)digest.back())) digest.pop_back();
    if (hashed.status != 0 || !is_manifest_digest(digest))
        throw ImageImportError("cannot tell the manifest digest of " + reference.text() + ": skopeo manifest-digest said '" +
                               digest + hashed.error + "' (expected sha256:<64 hex digits>)");
    return digest;
}

// Writes `text` as the file `name` in the folder `dir`, reporting a full disk as such.
void write_file_at(int dir, const std::string& name, const std::string& text, const std::string& folder) {
    int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
    int error = errno;
    if (fd >= 0) ::close(fd);
    if (!ok)
        throw ImageImportError("cannot write " + folder + "/" + name + ": " + std::strerror(error) +
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
    int layout = ::openat(cache.fd(), "oci", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (layout < 0) return "";
    std::vector<std::string> stale;
    if (DIR* stream = ::fdopendir(::dup(layout))) {
        while (dirent* entry = ::readdir(stream))
            if (std::string(entry->d_name).starts_with("oci-put-blob")) stale.emplace_back(entry->d_name);
        ::closedir(stream);
    }
    for (const auto& name : stale) ::unlinkat(layout, name.c_str(), 0);
    std::string note;
    int index = ::openat(layout, "index.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (index >= 0) {
        std::string text = read_bounded(index, image_json_limit);
        ::close(index);
        if (!nlohmann::json::accept(text)) {
            std::string aside = "index.json.damaged-" + std::to_string(std::time(nullptr));
            if (::renameat(layout, "index.json", layout, aside.c_str()) == 0)
                note = cache.path("oci/index.json") + " did not parse (" + std::to_string(text.size()) +
                       " bytes; an import was cut short): put aside as " + aside + ", and a new one started";
        }
    }
    ::close(layout);
    if (!stale.empty())
        note += (note.empty() ? "" : "; ") + std::string("removed ") + std::to_string(stale.size()) +
                " blob(s) a killed import was writing";
    return note;
}

// The import proper, with the digest's lock held and no published image: everything it makes
// is inside <hex>.tmp/ until the two renames. The tools get paths, not descriptors: the
// folder they lead through was checked to be the user's own, in a root-owned sticky folder,
// so only the user (whose rights they run with) or root could swap it.
void import_into(const ImageCache& cache, const CheckedImage& image, const std::string& digest,
                 const config::ContainerConfig& config, const std::string& credentials, std::ostream& progress) {
    const ImageReference& reference = image.reference;
    std::string hex = ImageCache::entry_name(digest, "");
    std::string temporary = hex + ".tmp";
    std::string folder = cache.folder();
    if (::mkdirat(cache.fd(), temporary.c_str(), 0700) != 0)
        throw ImageImportError("cannot make " + cache.path(temporary) + ": " + std::strerror(errno) +
                               (errno == ENOSPC ? " (the image cache " + folder + " is full)" : ""));
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
        std::vector<std::string> args = {"copy"};
        for (auto& o : registry_options(reference, config, credentials, "src-")) args.push_back(o);
        args.push_back(skopeo_name(image, digest));
        args.push_back(layout);
        ToolResult copied = run_skopeo(config, cache.path(temporary), args, {image, {cache.path("oci")}}, &progress);
        if (copied.status != 0) fail_registry(reference, "fetching", copied, credentials, folder);
        std::uint64_t fetched = folder_bytes(cache.path("oci")) - before;
        progress << "trellis-agent: fetched " << fetched << " bytes of new blobs in " << in_seconds(seconds_since(start)) << '\n' << std::flush;
    }
    auto step = Clock::now();
    std::string bundle = cache.path(temporary + "/bundle");
    {
        CacheLock reading = cache.lock_layout(false);
        ToolResult unpacked = run_in(cache.path(temporary),
                                     {config.umoci, "unpack", "--rootless", "--image", cache.path("oci") + ":" + hex, bundle});
        if (unpacked.status != 0) fail_tool("umoci unpack of " + source.text(), unpacked, folder);
        ToolResult settings = run_skopeo(config, cache.path(temporary), {"inspect", "--config", layout}, {image, {}});
        if (settings.status != 0) fail_tool("skopeo inspect --config of " + source.text(), settings, folder);
        if (settings.truncated)
            throw ImageImportError("the configuration of " + source.text() + " is too large (skopeo reads at most " +
                                   std::to_string(image_json_limit >> 20) + " MiB)");
        write_file_at(cache.fd(), temporary + "/settings.json", settings.out, folder);
    }
    progress << "trellis-agent: unpacked in " << in_seconds(seconds_since(step)) << '\n' << std::flush;
    // No setuid or setgid file in a cached image: trellis mounts it nosuid, but a cache file
    // mounted some other way (an administrator's loop mount) must not give root's rights.
    // As the namespace's root, which may enter the image's mode-000 folders.
    std::string find = find_program("find");
    ToolResult cleared = run_in(cache.path(temporary), {find.empty() ? "/usr/bin/find" : find, bundle + "/rootfs", "-perm",
                                                        "/6000", "!", "-type", "l", "-exec", "chmod", "ug-s", "{}", "+"},
                                nullptr, true);
    if (cleared.status != 0) fail_tool("clearing the setuid and setgid bits of " + source.text(), cleared, folder);
    step = Clock::now();
    std::string packed = cache.path(temporary + "/image.sqsh");
    ToolResult squashed = run_in(cache.path(temporary),
                                   // zstd at level 3: as small as the default gzip, packed about 20 times
                                   // faster (0.5 s against 9 s for the trainer's 94 MB image here)
                                   {config.mksquashfs, bundle + "/rootfs", packed, "-noappend", "-reproducible", "-mkfs-time",
                                    "0", "-all-time", "0", "-all-root", "-no-progress", "-quiet", "-comp", "zstd",
                                    "-Xcompression-level", "3"},
                                   nullptr, true);
    if (squashed.status != 0) fail_tool("mksquashfs of " + source.text(), squashed, folder);
    struct stat info {};
    ::fstatat(cache.fd(), (temporary + "/image.sqsh").c_str(), &info, 0);
    progress << "trellis-agent: packed " << info.st_size << " bytes of squashfs in " << in_seconds(seconds_since(step)) << '\n'
             << std::flush;
    // On disk before it is published, and the renames on disk after: a crash leaves the old
    // state or the new, never a cut image under its final name.
    int packed_fd = ::openat(cache.fd(), (temporary + "/image.sqsh").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool synced = packed_fd >= 0 && ::fsync(packed_fd) == 0;
    if (packed_fd >= 0) ::close(packed_fd);
    // The settings first: whoever sees the .sqsh finds its .json.
    if (!synced || ::renameat(cache.fd(), (temporary + "/settings.json").c_str(), cache.fd(), (hex + ".json").c_str()) != 0 ||
        ::renameat(cache.fd(), (temporary + "/image.sqsh").c_str(), cache.fd(), (hex + ".sqsh").c_str()) != 0 ||
        ::fsync(cache.fd()) != 0)
        throw ImageImportError("cannot publish " + cache.path(hex + ".sqsh") + ": " + std::strerror(errno));
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
        ToolResult untagged = run_in(cache.folder(), {config.umoci, "rm", "--image", layout + ":" + hex});
        if (untagged.status != 0 && !mentions(untagged.error, {"not found", "no such", "does not exist"})) failed += untagged.error;
    }
    ToolResult cleaned = run_in(cache.folder(), {config.umoci, "gc", "--layout", layout});
    if (cleaned.status != 0) failed += (failed.empty() ? "" : "; ") + cleaned.error;
    return failed;
}

// Evicts least recently used images until the user's folder takes at most image_cache_gib,
// removing their tags from the blob layout and its blobs no image left there needs; with no
// image left to evict, only the blobs no image needs.
void trim(const ImageCache& cache, const config::ContainerConfig& config, const std::string& keep, std::ostream& progress) {
    std::uint64_t limit = std::uint64_t(config.image_cache_gib) << 30;
    for (std::uint64_t taken = cache.bytes(); taken > limit; taken = cache.bytes()) {
        std::string evicted = cache.evict_oldest(keep);
        CacheLock writing = cache.lock_layout(true);
        std::string failed = clean_layout(cache, config, evicted.empty() ? "" : ImageCache::entry_name(evicted, ""));
        if (!evicted.empty())
            progress << "trellis-agent: evicted " << evicted << " (least recently used; the cache took " << (taken >> 20)
                     << " MiB, image_cache_gib is " << config.image_cache_gib << ")\n";
        if (!failed.empty())
            progress << "trellis-agent: warning: cleaning the blobs" << (evicted.empty() ? "" : " of " + evicted) << " from "
                     << cache.path("oci") << " failed: " << failed << '\n';
        if (evicted.empty()) break;
    }
}

// After a failed or killed import: its tag and the blobs only it fetched leave the layout,
// so that nothing of it counts against image_cache_gib. The error says whether that held.
ImageImportError forget_import(const ImageCache& cache, const config::ContainerConfig& config, const std::string& digest,
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
    return ImageImportError(message);
}

}  // namespace

ImportedImage import_image(const CheckedImage& checked, const config::ContainerConfig& config, std::ostream& progress) {
    auto start = Clock::now();
    const ImageReference& reference = checked.reference;
    if (checked.kind != ImageKind::registry && checked.kind != ImageKind::archive)
        throw UsageError("'" + reference.path + "' is a file on the node, not an image to import (accepted: "
                         "docker://HOST/REPOSITORY[:TAG|@sha256:DIGEST], oci-archive:PATH, docker-archive:PATH)");
    require_tool(config.skopeo, "skopeo");
    require_tool(config.umoci, "umoci");
    require_tool(config.mksquashfs, "mksquashfs");
    ImageCache cache(config, progress);
    cache.remove_dead_inspections();
    std::string credentials = reference.kind == ReferenceKind::registry ? auth_file() : "";

    ImportedImage image;
    image.digest = resolve_digest(checked, config, credentials, cache);
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
        CacheLock importing = cache.lock(image.digest, true);
        if (cache.has(image.digest)) {
            std::string damage = cache.damage(image.digest);
            if (damage.empty()) continue;  // another process imported it while this one waited
            progress << "trellis-agent: the cached " << image.squashfs << " is damaged (" << damage
                     << "): removed, and imported again\n";
            cache.remove_image(image.digest);
        }
        image.cached = false;
        cache.remove_temporaries(image.digest);
        try {
            import_into(cache, checked, image.digest, config, credentials, progress);
        } catch (const ImageImportError& error) {
            throw forget_import(cache, config, image.digest, error.what());
        } catch (...) {
            cache.remove_temporaries(image.digest);
            throw;
        }
        cache.remove_temporaries(image.digest);
    }
    cache.touch(image.digest);
    trim(cache, config, image.digest, progress);
    image.seconds = seconds_since(start);
    progress << "trellis-agent: " << (image.cached ? "found " : "imported ") << reference.text() << " as " << image.digest
             << " in " << in_seconds(image.seconds) << '\n'
             << std::flush;
    return image;
}

}  // namespace trellis::agent
