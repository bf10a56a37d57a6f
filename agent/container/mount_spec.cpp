#include "agent/container/mount_spec.hpp"

#include <sstream>
#include <stdexcept>

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

}  // namespace

std::vector<Mount> parse_mounts(const std::string& spec) {
    std::vector<Mount> mounts;
    if (spec.empty()) return mounts;
    for (const auto& entry : split(spec, ',')) {
        auto fields = split(entry, ':');
        auto refuse = [&](const std::string& why) {
            throw std::invalid_argument("mount '" + entry + "': " + why +
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
        if (mount.destination == "/") refuse("the destination cannot be /");
        mounts.push_back(mount);
    }
    return mounts;
}

std::string format_mount(const Mount& mount) {
    return mount.source + ":" + mount.destination + (mount.read_only ? ":ro" : "");
}

}  // namespace trellis::agent
