// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/spec_version.hpp"

#include <array>
#include <cctype>

#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

// The released versions of the specification (its SPEC.md "Released versions" table).
constexpr std::array<SpecVersion, 11> known_versions = {
    {{0, 1, 0}, {0, 2, 0}, {0, 3, 0}, {0, 4, 0}, {0, 5, 0}, {0, 6, 0}, {0, 7, 0}, {0, 8, 0}, {1, 0, 0}, {1, 1, 0}}};

bool parse_number(const std::string& text, std::size_t& at, int& out) {
    std::size_t start = at;
    long value = 0;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) && at - start < 6)
        value = value * 10 + (text[at++] - '0');
    out = static_cast<int>(value);
    return at > start && (at - start == 1 || text[start] != '0');
}

bool uses_edits(const Spec& spec, bool (*uses)(const ContainerEdits&)) {
    if (uses(spec.edits)) return true;
    for (const auto& device : spec.devices)
        if (uses(device.edits)) return true;
    return false;
}

}  // namespace

std::string SpecVersion::text() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

SpecVersion parse_spec_version(const std::string& text, const std::string& origin) {
    std::size_t at = text.starts_with('v') ? 1 : 0;
    SpecVersion version;
    bool ok = parse_number(text, at, version.major) && at < text.size() && text[at++] == '.' &&
              parse_number(text, at, version.minor) && at < text.size() && text[at++] == '.' &&
              parse_number(text, at, version.patch) && at == text.size();
    if (!ok)
        throw UsageError(origin + ": cdiVersion \"" + text + "\" is not a version (MAJOR.MINOR.PATCH, e.g. 0.5.0)");
    for (const auto& known : known_versions)
        if (version == known) return version;
    throw UsageError(origin + ": cdiVersion " + text + " is not a released CDI version; trellis reads 0.1.0 to " +
                     known_versions.back().text());
}

RequiredVersion required_version(const Spec& spec) {
    // From the newest feature down, so that the reason given is the one that decides.
    if (uses_edits(spec, [](const ContainerEdits& e) {
            for (const auto& name : e.unsupported)
                if (name == "netDevices") return true;
            return false;
        }))
        return {{1, 1, 0}, "netDevices"};
    if (uses_edits(spec, [](const ContainerEdits& e) {
            for (const auto& name : e.unsupported)
                if (name == "intelRdt") return true;
            return !e.additional_gids.empty();
        }))
        return {{0, 7, 0}, "additionalGids or intelRdt"};
    bool annotations = spec.has_annotations;
    for (const auto& device : spec.devices) annotations = annotations || device.has_annotations;
    if (annotations) return {{0, 6, 0}, "annotations"};
    if (spec.kind.find('.', spec.kind.find('/')) != std::string::npos)
        return {{0, 6, 0}, "a '.' in the class of kind " + spec.kind};
    for (const auto& device : spec.devices)
        if (!device.name.empty() && !std::isalpha(static_cast<unsigned char>(device.name[0])))
            return {{0, 5, 0}, "device name \"" + device.name + "\" not starting with a letter"};
    if (uses_edits(spec, [](const ContainerEdits& e) {
            for (const auto& node : e.device_nodes)
                if (!node.host_path.empty()) return true;
            return false;
        }))
        return {{0, 5, 0}, "deviceNodes hostPath"};
    if (uses_edits(spec, [](const ContainerEdits& e) {
            for (const auto& mount : e.mounts)
                if (!mount.type.empty()) return true;
            return false;
        }))
        return {{0, 4, 0}, "mounts type"};
    return {{0, 3, 0}, ""};
}

}  // namespace trellis::agent::cdi
