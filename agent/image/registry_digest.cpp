// SPDX-License-Identifier: Apache-2.0
#include "agent/image/registry_digest.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/image/policy.hpp"

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

}  // namespace

std::string user_cache_path(const std::string& name) {
    if (auto cache = variable("XDG_CACHE_HOME"); !cache.empty() && cache[0] == '/') return cache + "/trellis/" + name;
    return home_folder() + "/.cache/trellis/" + name;
}

std::string digest_record_path() { return user_cache_path("digests"); }

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
        if (auto known = remembered_digest(record, reference, config.digest_lifetime, now); !known.empty())
            return known;
    std::string digest = Skopeo(config).manifest_digest(reference);
    // A record that cannot be written costs a lookup at the next step, not this one.
    if (config.digest_lifetime > 0) try {
            remember_digest(record, reference, digest, config.digest_lifetime, now);
        } catch (const RegistryError&) {}
    return digest;
}

std::string checked_and_pinned(const std::string& image, const config::ContainerConfig& config) {
    auto checked = check_image(image, config);
    if (checked.kind != ImageKind::registry || !checked.reference.digest.empty()) return image;
    return checked.reference.pinned(resolve_digest(checked.reference, config)).text();
}

}  // namespace trellis::agent
