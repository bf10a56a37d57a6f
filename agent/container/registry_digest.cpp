#include "agent/container/registry_digest.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "agent/command.hpp"
#include "agent/container/image_policy.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

std::string variable(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

std::string home_folder() {
    if (auto home = variable("HOME"); !home.empty()) return home;
    struct passwd* entry = ::getpwuid(::getuid());
    return entry && entry->pw_dir ? entry->pw_dir : "";
}

// The user's registry credentials, as skopeo and podman look for them, or "" for none.
std::string auth_file() {
    if (auto named = variable("REGISTRY_AUTH_FILE"); !named.empty()) {
        if (::access(named.c_str(), R_OK) != 0)
            throw RegistryError("REGISTRY_AUTH_FILE names '" + named + "', which cannot be read: " +
                                std::strerror(errno) + " (accepted: a readable auth.json, or no REGISTRY_AUTH_FILE)");
        return named;
    }
    auto home = home_folder();
    auto usual = home + "/.config/containers/auth.json";
    return !home.empty() && ::access(usual.c_str(), R_OK) == 0 ? usual : "";
}

struct Finished {
    int status = -1;  // the exit status, or -1 when it did not exit normally
    std::string out, err;
};

// Runs `argv` as the caller with the environment a helper gets (user_environment) and the
// caller's proxy and certificate settings, which a site's registry may need; `input` on its
// stdin. Its output goes to memory files, so that neither stream can block the other.
Finished run(const std::vector<std::string>& argv, const std::string& input = "") {
    auto env = user_environment(::getuid());
    // Never the user's ~/.config/containers (registries.conf could send the lookup elsewhere):
    // the site's /etc/containers only; credentials are passed by --authfile.
    for (auto& entry : env)
        if (entry.starts_with("HOME=")) entry = "HOME=/nonexistent";
    for (const char* name : {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                             "SSL_CERT_FILE", "SSL_CERT_DIR"})
        if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
    int in = ::memfd_create("trellis-skopeo-in", MFD_CLOEXEC);
    int out = ::memfd_create("trellis-skopeo-out", MFD_CLOEXEC);
    int err = ::memfd_create("trellis-skopeo-err", MFD_CLOEXEC);
    if (in < 0 || out < 0 || err < 0) throw RegistryError(std::string("cannot make memory files: ") + std::strerror(errno));
    if (!input.empty() && ::write(in, input.data(), input.size()) != ssize_t(input.size()))
        throw RegistryError(std::string("cannot write the manifest to a memory file: ") + std::strerror(errno));
    ::lseek(in, 0, SEEK_SET);
    std::vector<char*> args, envp;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    for (const auto& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in, 0);
    posix_spawn_file_actions_adddup2(&actions, out, 1);
    posix_spawn_file_actions_adddup2(&actions, err, 2);
    pid_t pid = 0;
    int spawned = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    Finished done;
    if (spawned == 0) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        done.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        ::lseek(out, 0, SEEK_SET);
        done.out = read_bounded(out, image_json_limit + 1);
        done.err = read_message(err);
    }
    for (int fd : {in, out, err}) ::close(fd);
    if (spawned != 0)
        throw RegistryError("cannot run " + argv[0] + ": " + std::strerror(spawned) +
                            " (the skopeo key of [container] in trellis.toml names it)");
    return done;
}

bool says(const std::string& message, std::initializer_list<const char*> phrases) {
    std::string lower = message;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return std::any_of(phrases.begin(), phrases.end(), [&](const char* p) { return lower.find(p) != std::string::npos; });
}

// skopeo's last line, which holds its reason (the msg="..." of its log line), kept short.
std::string last_line(std::string message) {
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    if (auto newline = message.rfind('\n'); newline != std::string::npos) message = message.substr(newline + 1);
    if (auto msg = message.find("msg=\""); msg != std::string::npos && message.ends_with("\"")) {
        message = message.substr(msg + 5, message.size() - msg - 6);
        for (std::size_t quote; (quote = message.find("\\\"")) != std::string::npos;) message.erase(quote, 1);
    }
    if (message.size() > 400) message = message.substr(0, 400) + "...";
    return message;
}

[[noreturn]] void refuse_lookup(const ImageReference& reference, const config::ContainerConfig& config,
                                const std::string& authfile, const std::string& message) {
    std::string image = reference.text(), host = reference.host;
    std::string why = last_line(message);
    if (says(message, {"unauthorized", "authentication required", "denied", "401"}))
        throw RegistryError(
            image + ": the registry " + host + " refused access (unauthorized): " +
            (authfile.empty() ? std::string("no credentials were found (REGISTRY_AUTH_FILE is unset and "
                                            "~/.config/containers/auth.json does not exist)")
                              : "the credentials in " + authfile + " were not accepted") +
            "; log in with: skopeo login --authfile ~/.config/containers/auth.json " + host);
    if (says(message, {"manifest unknown", "not found", "name unknown"}))
        throw RegistryError(image + ": the registry " + host + " has no tag '" + reference.tag + "' of '" +
                            reference.repository + "' (" + why + ")");
    if (says(message, {"http response to https client"}))
        throw RegistryError(image + ": the registry " + host + " speaks plain HTTP, which only registries listed in "
                            "insecure_registries (" + config.origin + ") may use");
    if (says(message, {"x509", "certificate"}))
        throw RegistryError(image + ": the registry " + host + "'s TLS certificate cannot be verified (" + why +
                            "); only registries listed in insecure_registries (" + config.origin +
                            ") are reached without verifying it");
    if (says(message, {"connection refused", "no such host", "i/o timeout", "network is unreachable",
                       "deadline exceeded", "no route to host", "dial tcp", "timeout"}))
        throw RegistryError(image + ": cannot reach the registry " + host + " (" + why + ")");
    throw RegistryError(image + ": skopeo could not look up the tag's digest (" + why + ")");
}

std::string ask_registry(const ImageReference& reference, const config::ContainerConfig& config) {
    if (config.skopeo.empty() || config.skopeo[0] != '/')
        throw RegistryError("skopeo = '" + config.skopeo + "' in " + config.origin +
                            " is not an absolute path (accepted: the path of skopeo)");
    auto authfile = auth_file();
    // Only the manifest is fetched (--raw): skopeo's digest of it is what a pull by digest
    // asks for, and no blob is downloaded to learn it (`inspect --format {{.Digest}}` would
    // also fetch the image's configuration blob at every step).
    std::vector<std::string> inspect = {config.skopeo, "--command-timeout", "60s", "inspect", "--raw"};
    if (!authfile.empty()) inspect.insert(inspect.end(), {"--authfile", authfile});
    inspect.push_back(registry_is_insecure(reference, config) ? "--tls-verify=false" : "--tls-verify=true");
    inspect.push_back(reference.skopeo_source());
    auto manifest = run(inspect);
    if (manifest.status != 0) refuse_lookup(reference, config, authfile, manifest.err);
    if (manifest.out.size() > image_json_limit)
        throw RegistryError(reference.text() + ": the registry's manifest is too large (skopeo reads at most " +
                            std::to_string(image_json_limit >> 20) + " MiB)");
    auto computed = run({config.skopeo, "manifest-digest", "/dev/stdin"}, manifest.out);
    std::string digest = computed.out;
    while (!digest.empty() && (digest.back() == '\n' || digest.back() == ' ')) digest.pop_back();
    if (computed.status != 0 || !is_manifest_digest(digest))
        throw RegistryError(reference.text() + ": the registry's manifest has no sha256 digest (" +
                            last_line(computed.err.empty() ? digest : computed.err) + ")");
    return digest;
}

}  // namespace

std::string digest_record_path() {
    if (auto cache = variable("XDG_CACHE_HOME"); !cache.empty() && cache[0] == '/') return cache + "/trellis/digests";
    return home_folder() + "/.cache/trellis/digests";
}

std::string remembered_digest(const std::string& record, const ImageReference& reference, long lifetime,
                              std::time_t now) {
    std::ifstream in(record);
    std::string found;
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        long long when = 0;
        std::string text, digest;
        if (!(fields >> when >> text >> digest) || text != reference.text() || !is_manifest_digest(digest)) continue;
        if (when <= now && now - when <= lifetime) found = digest;  // the latest line wins
    }
    return found;
}

void remember_digest(const std::string& record, const ImageReference& reference, const std::string& digest,
                     long lifetime, std::time_t now) {
    fs::path file(record);
    std::error_code error;
    fs::create_directories(file.parent_path().parent_path(), error);
    ::mkdir(file.parent_path().c_str(), 0700);
    std::string kept;
    {
        std::ifstream in(record);
        for (std::string line; std::getline(in, line);) {
            std::istringstream fields(line);
            long long when = 0;
            std::string text;
            if (fields >> when >> text && text != reference.text() && when <= now && now - when <= lifetime)
                kept += line + "\n";
        }
    }
    kept += std::to_string(now) + " " + reference.text() + " " + digest + "\n";
    std::string temporary = record + ".XXXXXX";
    int fd = ::mkstemp(temporary.data());
    if (fd < 0) throw RegistryError("cannot record the digest in " + record + ": " + std::strerror(errno));
    bool written = ::write(fd, kept.data(), kept.size()) == ssize_t(kept.size());
    written = ::close(fd) == 0 && written;
    if (!written || ::rename(temporary.c_str(), record.c_str()) != 0) {
        int saved = errno;
        ::unlink(temporary.c_str());
        throw RegistryError("cannot record the digest in " + record + ": " + std::strerror(saved));
    }
}

std::string resolve_digest(const ImageReference& reference, const config::ContainerConfig& config) {
    if (reference.kind != ReferenceKind::registry) throw UsageError(reference.text() + " is not a registry image");
    if (!reference.digest.empty()) return reference.digest;
    std::string record = digest_record_path();
    std::time_t now = std::time(nullptr);
    if (config.digest_lifetime > 0)
        if (auto known = remembered_digest(record, reference, config.digest_lifetime, now); !known.empty()) return known;
    std::string digest = ask_registry(reference, config);
    // A record that cannot be written costs a lookup at the next step, not this one.
    if (config.digest_lifetime > 0) try {
            remember_digest(record, reference, digest, config.digest_lifetime, now);
        } catch (const RegistryError&) {
        }
    return digest;
}

std::string checked_and_pinned(const std::string& image, const config::ContainerConfig& config) {
    auto checked = check_image(image, config);
    if (checked.kind != ImageKind::registry || !checked.reference.digest.empty()) return image;
    return checked.reference.pinned(resolve_digest(checked.reference, config)).text();
}

}  // namespace trellis::agent
