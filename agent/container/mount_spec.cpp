// SPDX-License-Identifier: Apache-2.0
#include "agent/container/mount_spec.hpp"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::agent {

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
    if (!text.empty() && text.back() == separator) parts.emplace_back();
    return parts;
}

bool clean_absolute(const std::string& path) {
    if (path.empty() || path[0] != '/') return false;
    for (const auto& part : split(path.substr(1), '/'))
        if (part == "..") return false;
    return true;
}

// "/dev" covers "/dev" and "/dev/x", not "/devices".
bool at_or_under(const std::string& path, const std::string& folder) {
    return path == folder || (path.starts_with(folder) && path[folder.size()] == '/');
}

}  // namespace

void refuse_control_characters(const std::string& value, const std::string& what) {
    for (unsigned char c : value)
        if (c < 0x20 || c == 0x7f)
            throw UsageError(what + " holds a control character (code " + std::to_string(int(c)) +
                             "): not accepted in paths");
}

void check_destination(const std::string& destination) {
    std::string path = std::filesystem::path(destination).lexically_normal().string();
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    // Made by the container itself: the user's mount there would replace what the container
    // needs to work (its device files, the process table, the name files).
    for (const char* owned : {"/dev", "/proc", "/sys"})
        if (at_or_under(path, owned))
            throw UsageError("destination " + path + " lies in " + owned +
                             ", which the container provides (not accepted: /, /dev, /proc, /sys and "
                             "anything under them)");
    for (const char* file : {"/etc/hosts", "/etc/resolv.conf"})
        if (path == "/" || at_or_under(file, path))
            throw UsageError("destination " + path + " would cover " + file +
                             ", which the container takes from the host (not accepted: /, /etc, "
                             "/etc/hosts, /etc/resolv.conf)");
}

std::vector<Mount> parse_mounts(const std::string& spec) {
    std::vector<Mount> mounts;
    if (spec.empty()) return mounts;
    refuse_control_characters(spec, "the mount list");
    for (const auto& entry : split(spec, ',')) {
        auto fields = split(entry, ':');
        auto refuse = [&](const std::string& why) {
            throw UsageError("mount '" + entry + "': " + why +
                             " (accepted: SRC:DST[:ro|rw] with absolute paths, separated by commas)");
        };
        if (entry.empty()) refuse("empty entry");
        if (fields.size() == 1) fields.push_back(fields[0]);  // SRC alone: the same path inside
        if (fields.size() > 3) refuse("too many fields");
        Mount mount{fields[0], fields[1], false};
        if (fields.size() == 3) {
            if (fields[2] != "ro" && fields[2] != "rw") refuse("'" + fields[2] + "' is not ro or rw");
            mount.read_only = fields[2] == "ro";
        }
        if (!clean_absolute(mount.source)) refuse("the source is not an absolute path without '..'");
        if (!clean_absolute(mount.destination)) refuse("the destination is not an absolute path without '..'");
        try {
            check_destination(mount.destination);
        } catch (const UsageError& error) {
            refuse(error.what());
        }
        mounts.push_back(mount);
    }
    return mounts;
}

std::string format_mount(const Mount& mount) {
    return mount.source + ":" + mount.destination + (mount.read_only ? ":ro" : "");
}

}  // namespace trellis::agent
