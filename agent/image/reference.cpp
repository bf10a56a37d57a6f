// SPDX-License-Identifier: Apache-2.0
#include "agent/image/reference.hpp"

#include <algorithm>
#include <cctype>

#include "common/error.hpp"

namespace trellis::agent {

namespace {

const char* const accepted =
    " (accepted: docker://[HOST[:PORT]/]REPOSITORY[:TAG|@sha256:DIGEST], oci-archive:PATH, docker-archive:PATH, "
    "or the absolute path of an OCI bundle folder, a .sif or a .sqsh file)";

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
    throw UsageError("image '" + text + "': " + why + accepted);
}

bool ends_with(const std::string& text, const std::string& end) {
    return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// A repository component as registries accept it: lowercase letters and digits, separated
// by one '.', '_', '-' or "__".
bool is_component(const std::string& part) {
    if (part.empty() || !std::isalnum(static_cast<unsigned char>(part.front())) ||
        !std::isalnum(static_cast<unsigned char>(part.back())))
        return false;
    for (std::size_t i = 0; i < part.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(part[i]);
        if (std::isdigit(c) || (std::islower(c))) continue;
        if (c != '.' && c != '_' && c != '-') return false;
        bool doubled_underscore = c == '_' && i + 1 < part.size() && part[i + 1] == '_';
        if (!std::isalnum(static_cast<unsigned char>(part[i + 1])) && !doubled_underscore) return false;
        if (doubled_underscore) ++i;
    }
    return true;
}

bool is_tag(const std::string& tag) {
    if (tag.empty() || tag.size() > 128 || tag[0] == '.' || tag[0] == '-') return false;
    return std::all_of(tag.begin(), tag.end(),
                       [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '.' || c == '-'; });
}

bool is_host(const std::string& host) {
    if (host.empty()) return false;
    auto colon = host.rfind(':');
    std::string name = colon == std::string::npos ? host : host.substr(0, colon);
    if (colon != std::string::npos) {
        std::string port = host.substr(colon + 1);
        if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
            std::stoi(port) == 0 || std::stoi(port) > 65535)
            return false;
    }
    return !name.empty() && std::all_of(name.begin(), name.end(),
                                        [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '-'; });
}

ImageReference parse_registry(const std::string& text, std::string rest) {
    ImageReference ref;
    ref.kind = ReferenceKind::registry;
    if (auto at = rest.find('@'); at != std::string::npos) {
        ref.digest = rest.substr(at + 1);
        rest.resize(at);
        if (!is_manifest_digest(ref.digest)) refuse(text, "'" + ref.digest + "' is not a sha256 digest");
    }
    auto slash = rest.find('/');
    std::string first = rest.substr(0, slash);
    if (slash != std::string::npos &&
        (first.find('.') != std::string::npos || first.find(':') != std::string::npos || first == "localhost")) {
        ref.host = first;
        rest = rest.substr(slash + 1);
        if (!is_host(ref.host)) refuse(text, "'" + ref.host + "' is not a registry host[:port]");
    } else {
        ref.host = "docker.io";
    }
    if (auto colon = rest.rfind(':'); colon != std::string::npos) {
        ref.tag = rest.substr(colon + 1);
        rest.resize(colon);
        if (!is_tag(ref.tag)) refuse(text, "'" + ref.tag + "' is not a tag (letters, digits, '_', '.', '-')");
        if (!ref.digest.empty()) ref.tag.clear();  // the digest decides; the tag only named it
    } else if (ref.digest.empty()) {
        ref.tag = "latest";
    }
    if (rest.empty()) refuse(text, "no repository");
    std::size_t start = 0;
    while (true) {
        auto end = rest.find('/', start);
        std::string part = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!is_component(part))
            refuse(text, "'" + part + "' is not a repository name (lowercase letters, digits, '.', '_', '-')");
        if (end == std::string::npos) break;
        start = end + 1;
    }
    if (ref.host == "docker.io" && rest.find('/') == std::string::npos) rest = "library/" + rest;
    ref.repository = rest;
    return ref;
}

}  // namespace

bool is_manifest_digest(const std::string& text) {
    const std::string prefix = "sha256:";
    return text.size() == prefix.size() + 64 && text.compare(0, prefix.size(), prefix) == 0 &&
           std::all_of(text.begin() + long(prefix.size()), text.end(),
                       [](unsigned char c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); });
}

ImageReference parse_image_reference(const std::string& text) {
    if (std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::iscntrl(c) || c == ' '; }))
        refuse(text, "it has a space or a control character");
    for (auto [prefix, kind] : {std::pair{"oci-archive:", ReferenceKind::oci_archive},
                                std::pair{"docker-archive:", ReferenceKind::docker_archive}}) {
        std::string p = prefix;
        if (text.compare(0, p.size(), p) == 0) {
            ImageReference ref;
            ref.kind = kind;
            ref.path = text.substr(p.size());
            if (ref.path.empty() || ref.path[0] != '/') refuse(text, "the archive's path must be absolute");
            if (ref.path.find(':') != std::string::npos) refuse(text, "the archive's path has a ':'");
            return ref;
        }
    }
    const std::string docker = "docker://";
    if (text.compare(0, docker.size(), docker) == 0) return parse_registry(text, text.substr(docker.size()));
    if (text.find("://") != std::string::npos) refuse(text, "an unknown transport");
    if (text.empty() || text[0] != '/') refuse(text, "not an absolute path and no transport");
    ImageReference ref;
    ref.path = text;
    return ref;
}

std::string ImageReference::registry_path() const { return host + "/" + repository; }

std::string ImageReference::text() const {
    switch (kind) {
    case ReferenceKind::registry: return "docker://" + registry_path() + (digest.empty() ? ":" + tag : "@" + digest);
    case ReferenceKind::oci_archive: return "oci-archive:" + path;
    case ReferenceKind::docker_archive: return "docker-archive:" + path;
    case ReferenceKind::path: break;
    }
    return path;
}

ImageReference ImageReference::pinned(const std::string& manifest_digest) const {
    ImageReference ref = *this;
    ref.digest = manifest_digest;
    ref.tag.clear();
    return ref;
}

bool ImageReference::is_squashfs_file() const { return kind == ReferenceKind::path && ends_with(path, ".sqsh"); }

}  // namespace trellis::agent
