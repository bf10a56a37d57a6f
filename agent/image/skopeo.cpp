// SPDX-License-Identifier: Apache-2.0
#include "agent/image/skopeo.hpp"

#include <pwd.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "agent/image/policy.hpp"
#include "agent/image/import_tool.hpp"
#include "agent/container/namespaces.hpp"
#include "agent/container/rootfs.hpp"

namespace trellis::agent {

namespace {

std::string variable(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

// The user's registry credentials, where skopeo and podman look for them, or "" for none.
std::string auth_file() {
    if (auto named = variable("REGISTRY_AUTH_FILE"); !named.empty()) {
        if (::access(named.c_str(), R_OK) != 0)
            throw RegistryError("REGISTRY_AUTH_FILE names '" + named + "', which cannot be read: " +
                                std::strerror(errno) + " (accepted: a readable auth.json, or no REGISTRY_AUTH_FILE)");
        return named;
    }
    std::string home = variable("HOME");
    if (home.empty())
        if (passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_dir) home = entry->pw_dir;
    std::string usual = home + "/.config/containers/auth.json";
    return !home.empty() && ::access(usual.c_str(), R_OK) == 0 ? usual : "";
}

bool says(const std::string& message, std::initializer_list<const char*> phrases) {
    std::string lower = message;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return std::any_of(phrases.begin(), phrases.end(),
                       [&](const char* p) { return lower.find(p) != std::string::npos; });
}

}  // namespace

SkopeoFailure classify_skopeo(int status, const std::string& said) {
    if (says(said, {"no space left on device"})) return SkopeoFailure::no_space;
    // A registry's own error codes ("denied: ...", "unauthorized: ..."), not a local
    // "permission denied".
    if (says(said, {"unauthorized", "authentication required", "denied:", "resource is denied",
                    "invalid username/password", "status code 401", "status 401", "401 unauthorized"}))
        return SkopeoFailure::unauthorized;
    // skopeo 1.15 and later exit 2 when the image is not there (registries may say so in
    // words of their own); earlier ones exit 1 and say it.
    if (status == 2 || says(said, {"manifest unknown", "name unknown", "not found"})) return SkopeoFailure::not_found;
    if (says(said, {"http response to https client"})) return SkopeoFailure::plain_http;
    if (says(said, {"x509", "certificate"})) return SkopeoFailure::certificate;
    if (says(said, {"connection refused", "no such host", "i/o timeout", "network is unreachable", "deadline exceeded",
                    "no route to host", "connection reset", "tls handshake timeout", "dial tcp", "timeout"}))
        return SkopeoFailure::unreachable;
    return SkopeoFailure::other;
}

std::string skopeo_reason(std::string said) {
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    if (auto newline = said.rfind('\n'); newline != std::string::npos) said = said.substr(newline + 1);
    if (auto msg = said.find("msg=\""); msg != std::string::npos && said.ends_with("\"")) {
        said = said.substr(msg + 5, said.size() - msg - 6);
        for (std::size_t quote; (quote = said.find("\\\"")) != std::string::npos;) said.erase(quote, 1);
    }
    if (said.size() > 400) said = said.substr(0, 400) + "...";
    return said;
}

Skopeo::Skopeo(const config::ContainerConfig& config) : config_(config) {
    const std::string& program = config.skopeo;
    if (program.empty() || program[0] != '/' || ::access(program.c_str(), X_OK) != 0)
        throw RegistryError(
            "cannot run skopeo '" + program +
            "': " + (program.empty() || program[0] != '/' ? "not an absolute path" : std::strerror(errno)) +
            " (install it, or set [container] skopeo in " +
            (config.origin.empty() ? std::string("trellis.toml") : config.origin) + " to its absolute path)");
}

const std::string& Skopeo::credentials() const {
    if (!credentials_) credentials_ = auth_file();
    return *credentials_;
}

Finished Skopeo::run(std::vector<std::string> args, const SkopeoScratch& scratch, const std::string& input,
                     const std::function<void(const std::string&)>& on_line) const {
    Command skopeo;
    skopeo.argv = {config_.skopeo};
    if (!scratch.tmpdir.empty()) skopeo.argv.insert(skopeo.argv.end(), {"--tmpdir", scratch.tmpdir});
    skopeo.argv.insert(skopeo.argv.end(), args.begin(), args.end());
    skopeo.env = tool_environment(scratch.tmpdir);
    for (auto& entry : skopeo.env)
        if (entry.starts_with("HOME=")) entry = "HOME=/nonexistent";
    // A site's registry may need the way out and the certificates the caller was given.
    for (const char* name : {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                             "SSL_CERT_FILE", "SSL_CERT_DIR"})
        if (const char* value = std::getenv(name)) skopeo.env.push_back(std::string(name) + "=" + value);
    skopeo.own_session = false;
    skopeo.input = input;
    skopeo.on_line = on_line;
    skopeo.output_limit = 2 * image_json_limit;
    if (scratch.archive >= 0) {
        skopeo.fd3 = scratch.archive;
        std::vector<std::string> writable = scratch.writable;
        if (!scratch.tmpdir.empty()) writable.push_back(scratch.tmpdir);
        // A PID namespace too, whose /proc shows only skopeo: /proc/PID/root of another of the
        // user's processes would otherwise lead back to the writable mounts.
        skopeo.setup = [writable] {
            if (enter_user_namespace(CLONE_NEWNS | CLONE_NEWPID, false) && mount_read_only_but(writable)) return true;
            say_no_user_namespace(" whose mounts are read-only but its own folder");
            return false;
        };
        skopeo.setup_in_fork = [] { return mount_own_proc(); };
    }
    try {
        return agent::run(skopeo);
    } catch (const std::runtime_error& error) {
        throw RegistryError("cannot run " + config_.skopeo + ": " + error.what());
    }
}

std::vector<std::string> Skopeo::registry_options(const ImageReference& image, const char* prefix) const {
    if (image.kind != ReferenceKind::registry) return {};
    std::vector<std::string> options;
    if (!credentials().empty()) options.push_back(std::string("--") + prefix + "authfile=" + credentials());
    // Always said: a registries.conf entry may not turn verification off.
    options.push_back(std::string("--") + prefix +
                      "tls-verify=" + (registry_is_insecure(image, config_) ? "false" : "true"));
    return options;
}

std::string Skopeo::source(const ImageReference& image, const SkopeoScratch& scratch) const {
    if (scratch.archive < 0) return image.text();
    ImageReference opened = image;
    opened.path = "/dev/fd/3";
    return opened.text();
}

std::string Skopeo::manifest_digest(const ImageReference& image, const SkopeoScratch& scratch) const {
    if (image.kind == ReferenceKind::registry && !image.digest.empty()) return image.digest;
    // --raw lists no tags: nothing else is asked of the registry.
    std::vector<std::string> inspect = {"--command-timeout", "60s", "inspect", "--raw"};
    for (auto& option : registry_options(image, "")) inspect.push_back(option);
    inspect.push_back(source(image, scratch));
    Finished manifest = run(inspect, scratch);
    if (manifest.status != 0) registry_failure(image, "looking up", manifest);
    if (manifest.truncated || manifest.out.size() > image_json_limit)
        throw RegistryError(image.text() + ": its manifest is too large (skopeo reads at most " +
                            std::to_string(image_json_limit >> 20) + " MiB)");
    Finished hashed = run({"manifest-digest", "/dev/stdin"}, {scratch.tmpdir}, manifest.out);
    std::string digest = hashed.out;
    while (!digest.empty() && std::isspace((unsigned char)digest.back())) digest.pop_back();
    if (hashed.status != 0 || !is_manifest_digest(digest))
        throw RegistryError(image.text() + ": cannot tell its manifest's digest: skopeo manifest-digest said '" +
                            skopeo_reason(hashed.err.empty() ? digest : hashed.err) +
                            "' (expected sha256:<64 hex digits>)");
    return digest;
}

Finished Skopeo::copy(const ImageReference& image, const std::string& destination, const SkopeoScratch& scratch,
                      const std::function<void(const std::string&)>& on_line) const {
    std::vector<std::string> args = {"copy"};
    for (auto& option : registry_options(image, "src-")) args.push_back(option);
    args.push_back(source(image, scratch));
    args.push_back(destination);
    return run(args, scratch, "", on_line);
}

Finished Skopeo::inspect_config(const std::string& layout, const SkopeoScratch& scratch) const {
    return run({"inspect", "--config", layout}, {scratch.tmpdir});
}

void Skopeo::registry_failure(const ImageReference& image, const std::string& step, const Finished& result) const {
    std::string what = image.text(), host = image.host, why = skopeo_reason(result.err);
    SkopeoFailure failure = classify_skopeo(result.status, result.err);
    // An archive has no registry to blame: skopeo's words as they are.
    if (image.kind != ReferenceKind::registry || failure == SkopeoFailure::other || failure == SkopeoFailure::no_space)
        throw RegistryError(step + " " + what + " failed (status " + std::to_string(result.status) + "): " + result.err,
                            failure);
    switch (failure) {
    case SkopeoFailure::unauthorized:
        throw RegistryError(
            what + ": the registry " + host + " refused access (unauthorized): " +
                (credentials().empty() ? std::string("no credentials were found (REGISTRY_AUTH_FILE is unset "
                                                     "and ~/.config/containers/auth.json does not exist)")
                                       : "the credentials in " + credentials() + " were not accepted") +
                "; log in with: skopeo login --authfile ~/.config/containers/auth.json " + host,
            failure);
    case SkopeoFailure::not_found:
        throw RegistryError(what + ": the registry " + host + " has no " +
                                (image.digest.empty() ? "tag '" + image.tag + "'" : "manifest " + image.digest) +
                                " of '" + image.repository + "' (" + why + ")",
                            failure);
    case SkopeoFailure::plain_http:
        throw RegistryError(what + ": the registry " + host +
                                " speaks plain HTTP, which only registries listed in "
                                "insecure_registries (" +
                                config_.origin + ") may use",
                            failure);
    case SkopeoFailure::certificate:
        throw RegistryError(what + ": the registry " + host + "'s TLS certificate cannot be verified (" + why +
                                "); only registries listed in insecure_registries (" + config_.origin +
                                ") are reached without verifying it",
                            failure);
    default: throw RegistryError(what + ": cannot reach the registry " + host + " (" + why + ")", failure);
    }
}

}  // namespace trellis::agent
