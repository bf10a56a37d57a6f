#include "agent/image/broadcast.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "agent/command.hpp"
#include "agent/image/registry_digest.hpp"

namespace trellis::agent {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What `trellis-agent import` printed: "KEY VALUE" lines.
std::string printed(const std::string& out, const std::string& key) {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with(key + " ")) return line.substr(key.size() + 1);
    return "";
}

// A file the broadcast wrote for this user: a regular file of theirs.
bool sent_file(const ImageCache& cache, const std::string& name) {
    struct stat info {};
    return ::fstatat(cache.fd(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode) &&
           info.st_uid == ::getuid();
}

}  // namespace

std::string sent_name(const std::string& digest, const std::string& step, const char* suffix) {
    return ImageCache::entry_name(digest, "") + ".sent-" + step + suffix;
}

std::string staging_folder(const config::ContainerConfig& config, uid_t uid) {
    struct stat info {};
    std::string node = config.image_cache + "/" + std::to_string(uid);
    if (::lstat(node.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == uid) return "";
    std::string folder = user_cache_path("images");
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error || ::chmod(folder.c_str(), 0700) != 0)
        throw ImageImportError("cannot make " + folder + " for the image srun sends to the nodes: " +
                               (error ? error.message() : std::string(std::strerror(errno))));
    return folder;
}

SentImage send_image(const std::string& pinned, const config::Config& config, const std::string& staging,
                     std::uint32_t job, std::uint32_t step, const std::vector<std::string>& environment) {
    SentImage sent;
    auto start = Clock::now();
    Command import;
    import.argv = {config.container.agent, "import", pinned};
    if (!config.path.empty()) import.argv.insert(import.argv.end(), {"--config", config.path});
    if (!staging.empty()) import.argv.insert(import.argv.end(), {"--folder", staging});
    import.env = environment;
    import.own_session = false;  // srun's Ctrl-C stops it too
    Finished imported = run(import);
    if (imported.status != 0)
        throw ImageImportError("importing " + pinned + " on srun's host failed (status " + std::to_string(imported.status) +
                               "): " + imported.err);
    std::string squashfs = printed(imported.out, "squashfs"), settings = printed(imported.out, "settings");
    sent.digest = printed(imported.out, "digest");
    sent.imported = printed(imported.out, "cached") == "no";
    if (squashfs.empty() || settings.empty() || sent.digest.empty())
        throw ImageImportError("trellis-agent import printed no image for " + pinned + ": " + imported.out);
    sent.import_seconds = seconds_since(start);

    std::string sbcast = find_program("sbcast");
    if (sbcast.empty()) throw ImageImportError("sbcast (Slurm's client commands) is not installed on srun's host");
    std::string folder = config.container.image_cache + "/" + std::to_string(::getuid());
    std::string tag = std::to_string(job) + "." + std::to_string(step);
    start = Clock::now();
    // The settings last: a node takes the image only when both are there, so a broadcast cut
    // short on any node leaves no image anywhere.
    for (auto [file, suffix] : {std::pair{squashfs, ".sqsh"}, std::pair{settings, ".json"}}) {
        Command send;
        send.argv = {sbcast, "--jobid", tag, file, folder + "/" + sent_name(sent.digest, tag, suffix)};
        send.env = environment;
        send.own_session = false;
        Finished sent_file = run(send);
        if (sent_file.status != 0)
            throw ImageImportError("sbcast of " + file + " to the job's nodes failed (status " +
                                   std::to_string(sent_file.status) + "): " + sent_file.err +
                                   (sent_file.err.find("No such file") != std::string::npos
                                        ? " (the job prolog makes each node's " + folder +
                                              " as root: PrologFlags=Alloc in slurm.conf runs it before the first step)"
                                        : ""));
    }
    sent.send_seconds = seconds_since(start);
    return sent;
}

bool received_image(const ImageCache& cache, CacheEntry& entry, const std::string& digest, const std::string& step) {
    std::string image = sent_name(digest, step, ".sqsh"), settings = sent_name(digest, step, ".json");
    if (step.empty() || !sent_file(cache, image) || !sent_file(cache, settings)) return false;
    entry.make_tmp();
    if (::renameat(cache.fd(), image.c_str(), cache.fd(), entry.tmp_name(CacheEntry::image_file).c_str()) != 0 ||
        ::renameat(cache.fd(), settings.c_str(), cache.fd(), entry.tmp_name(CacheEntry::settings_file).c_str()) != 0)
        throw ImageImportError("cannot take the image srun sent (" + cache.path(image) + "): " + std::strerror(errno));
    entry.finalize();
    return true;
}

void remove_sent_files(const ImageCache& cache, const std::string& digest, const std::string& step) {
    std::time_t day_ago = std::time(nullptr) - 24 * 3600;
    cache.remove_entries([&](const std::string& name, const struct stat& info) {
        if (name.find(".sent-") == std::string::npos || !S_ISREG(info.st_mode)) return false;
        bool own = !step.empty() && (name == sent_name(digest, step, ".sqsh") || name == sent_name(digest, step, ".json"));
        return own || info.st_mtime < day_ago;
    });
}

}  // namespace trellis::agent
