// SPDX-License-Identifier: Apache-2.0
#include "agent/image/broadcast.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "agent/command.hpp"
#include "agent/image/elapsed.hpp"
#include "agent/image/registry_digest.hpp"

namespace trellis::agent {

namespace {

using Clock = std::chrono::steady_clock;

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

std::string variable(const std::vector<std::string>& environment, const std::string& name) {
    for (const auto& entry : environment)
        if (entry.starts_with(name + "=")) return entry.substr(name.size() + 1);
    return "";
}

bool interrupted(int status) { return status == 128 + SIGINT || status == 128 + SIGTERM || status == 128 + SIGHUP; }

}  // namespace

std::string sent_name(const std::string& digest, const std::string& step, const char* suffix) {
    return ImageCache::entry_name(digest, "") + ".sent-" + step + suffix;
}

bool is_step_name(const std::string& step) {
    auto dot = step.find('.');
    auto digits = [](const std::string& text) {
        return !text.empty() && text.size() <= 10 &&
               std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
    };
    return dot != std::string::npos && digits(step.substr(0, dot)) && digits(step.substr(dot + 1));
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
                               (error ? error.message() : std::string(std::strerror(errno))) +
                               " (accepted: a folder of yours on local disk, from $XDG_CACHE_HOME or $HOME; or "
                               "image_broadcast = false in trellis.toml, and each node imports the image)");
    return folder;
}

StagedImage stage_image(const std::string& pinned, const config::Config& config, const std::string& folder,
                        const std::vector<std::string>& environment) {
    auto start = Clock::now();
    Command import;
    import.argv = {config.container.agent, "import", pinned};
    if (!config.path.empty()) import.argv.insert(import.argv.end(), {"--config", config.path});
    if (!folder.empty()) import.argv.insert(import.argv.end(), {"--folder", folder});
    import.env = environment;
    import.own_session = false;  // srun's Ctrl-C stops it too
    Finished imported = run(import);
    if (interrupted(imported.status))
        throw ImportInterrupted("the import of " + pinned + " on srun's host was interrupted");
    if (imported.status != 0)
        throw ImageImportError("importing " + pinned + " on srun's host failed (status " +
                               std::to_string(imported.status) + "): " + imported.err);
    StagedImage image{folder,
                      printed(imported.out, "digest"),
                      printed(imported.out, "squashfs"),
                      printed(imported.out, "settings"),
                      printed(imported.out, "cached") == "no",
                      seconds_since(start)};
    if (image.squashfs.empty() || image.settings.empty() || image.digest.empty())
        throw ImageImportError("trellis-agent import printed no image for " + pinned + ": " + imported.out);
    return image;
}

double send_image(const StagedImage& image, const config::Config& config, std::uint32_t job, std::uint32_t step,
                  const std::vector<std::string>& environment, std::chrono::seconds limit) {
    std::string path = variable(environment, "PATH");
    std::string sbcast = find_program("sbcast", path), timeout = find_program("timeout");
    if (sbcast.empty() || timeout.empty())
        throw ImageImportError(
            std::string(sbcast.empty() ? "sbcast (Slurm's client commands)" : "timeout (coreutils)") +
            " is not in srun's PATH (" + path + ")");
    std::vector<std::string> sbcast_environment;
    std::copy_if(environment.begin(), environment.end(), std::back_inserter(sbcast_environment),
                 [](const std::string& entry) { return !entry.starts_with("SBCAST_"); });  // sbcast's own settings
    // The staged image stays while it is sent: another srun's import may evict it otherwise.
    std::ostringstream warnings;
    ImageCache staged =
        image.folder.empty() ? ImageCache(config.container, warnings) : ImageCache::own_folder(image.folder);
    CacheLock held = staged.lock(image.digest, false);
    if (!staged.has(image.digest))
        throw ImageImportError("the image imported on srun's host (" + image.squashfs +
                               ") was removed before it was sent");

    std::string folder = config.container.image_cache + "/" + std::to_string(::getuid());
    std::string tag = std::to_string(job) + "." + std::to_string(step);
    auto start = Clock::now();
    // The settings last: a node takes the image only when both are there.
    for (auto [file, suffix] : {std::pair{image.squashfs, ".sqsh"}, std::pair{image.settings, ".json"}}) {
        auto left = limit - std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start);
        Command send;
        send.argv = {timeout,
                     "--kill-after=5",
                     std::to_string(std::max<long>(1, left.count())),
                     sbcast,
                     "--jobid",
                     tag,
                     file,
                     folder + "/" + sent_name(image.digest, tag, suffix)};
        send.env = sbcast_environment;
        send.own_session = false;
        Finished sent = run(send);
        if (sent.status == 124 || sent.status == 128 + SIGKILL)
            throw ImageImportError("sbcast of " + file + " did not end within " + std::to_string(limit.count()) +
                                   " s, stopped so that the step starts before its credential expires (AuthInfo's "
                                   "cred_expire in slurm.conf)");
        if (interrupted(sent.status)) throw ImportInterrupted("sending the image to the step's nodes was interrupted");
        if (sent.status != 0) {
            bool no_folder = sent.err.find("REQUEST_FILE_BCAST(") != std::string::npos &&
                             sent.err.find("No such file") != std::string::npos;
            throw ImageImportError("sbcast of " + file + " to the step's nodes failed (status " +
                                   std::to_string(sent.status) + "): " + sent.err +
                                   (no_folder ? " (the job prolog makes " + folder +
                                                    " on each node as root: PrologFlags=Alloc in slurm.conf runs it "
                                                    "before the first step)"
                                              : ""));
        }
    }
    return seconds_since(start);
}

bool received_image(const ImageCache& cache, CacheEntry& entry, const std::string& digest, const std::string& step) {
    std::string image = sent_name(digest, step, ".sqsh"), settings = sent_name(digest, step, ".json");
    if (!is_step_name(step) || !sent_file(cache, image) || !sent_file(cache, settings)) return false;
    entry.make_tmp();
    if (::renameat(cache.fd(), image.c_str(), cache.fd(), entry.tmp_name(CacheEntry::image_file).c_str()) != 0 ||
        ::renameat(cache.fd(), settings.c_str(), cache.fd(), entry.tmp_name(CacheEntry::settings_file).c_str()) != 0) {
        int error = errno;
        entry.clean_tmp();
        throw ImageImportError("cannot take the image srun sent (" + cache.path(image) + "): " + std::strerror(error));
    }
    entry.finalize();
    return true;
}

void remove_sent_files(const ImageCache& cache, const std::string& digest, const std::string& step) {
    // ctime, which sbcast cannot set back (it may keep the staged file's mtime).
    std::time_t day_ago = std::time(nullptr) - 24 * 3600;
    cache.remove_entries([&](const std::string& name, const struct stat& info) {
        if (name.find(".sent-") == std::string::npos || !S_ISREG(info.st_mode)) return false;
        bool own = is_step_name(step) &&
                   (name == sent_name(digest, step, ".sqsh") || name == sent_name(digest, step, ".json"));
        return own || info.st_ctime < day_ago;
    });
}

}  // namespace trellis::agent
