// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/spec_parser.hpp"

#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <map>

#include "agent/container/cdi/spec_version.hpp"
#include "agent/container/cdi/yaml_tree.hpp"
#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

// Where a value sits, for messages: "FILE:LINE: devices[1].containerEdits.mounts[0].hostPath".
struct Place {
    const std::string& origin;
    std::string path;
    Place at(const std::string& field) const { return {origin, path.empty() ? field : path + "." + field}; }
    Place item(std::size_t i) const { return {origin, path + "[" + std::to_string(i) + "]"}; }
    [[noreturn]] void fail(const YamlNode& node, const std::string& what) const {
        throw UsageError(origin + ":" + std::to_string(node.line) + ": " + path + ": " + what);
    }
};

std::string read_string(const YamlNode& node, const Place& place) {
    if (node.kind != YamlNode::Kind::scalar) place.fail(node, "expected a string");
    return node.is_null() ? std::string() : node.scalar;
}

std::vector<std::string> read_strings(const YamlNode& node, const Place& place) {
    std::vector<std::string> out;
    if (node.is_null()) return out;
    if (node.kind != YamlNode::Kind::sequence) place.fail(node, "expected a list of strings");
    for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (node.items[i].kind != YamlNode::Kind::scalar || node.items[i].is_null())
            place.item(i).fail(node.items[i], "expected a string");
        out.push_back(node.items[i].scalar);
    }
    return out;
}

// Integers as JSON writes them, and as YAML 1.1 does (0o17 and a leading 0 are octal,
// 0x hexadecimal), within [low, high].
std::int64_t read_integer(const YamlNode& node, const Place& place, std::int64_t low, std::int64_t high) {
    if (node.kind != YamlNode::Kind::scalar || node.quoted || node.scalar.empty())
        place.fail(node, "expected a number");
    std::string text = node.scalar;
    bool negative = text[0] == '-';
    if (negative || text[0] == '+') text.erase(0, 1);
    int base = 10;
    if (text.starts_with("0x"))
        base = 16, text.erase(0, 2);
    else if (text.starts_with("0o"))
        base = 8, text.erase(0, 2);
    else if (text.size() > 1 && text[0] == '0')
        base = 8, text.erase(0, 1);
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
        place.fail(node, "\"" + node.scalar + "\" is not an integer");
    if (negative) value = -value;
    if (value < low || value > high)
        place.fail(node, node.scalar + " is out of range [" + std::to_string(low) + ", " + std::to_string(high) + "]");
    return value;
}

constexpr std::int64_t uint32_max = std::numeric_limits<std::uint32_t>::max();

// Walks a mapping, handing each field to its reader; a field without one is refused.
void read_fields(const YamlNode& node, const Place& place,
                 const std::map<std::string, std::function<void(const YamlNode&, const Place&)>>& readers) {
    if (node.kind != YamlNode::Kind::mapping) place.fail(node, "expected a mapping of fields");
    for (const auto& [name, value] : node.entries) {
        auto reader = readers.find(name);
        if (reader == readers.end()) {
            std::string known;
            for (const auto& [field, _] : readers) known += (known.empty() ? "" : ", ") + field;
            place.at(name).fail(value, "unknown field (known here: " + known + ")");
        }
        reader->second(value, place.at(name));
    }
}

void read_annotations(const YamlNode& node, const Place& place, bool& has) {
    if (node.is_null()) return;
    if (node.kind != YamlNode::Kind::mapping) place.fail(node, "expected a mapping of strings");
    for (const auto& [key, value] : node.entries) read_string(value, place.at(key));
    has = !node.entries.empty();
}

template <typename Item>
std::vector<Item> read_list(const YamlNode& node, const Place& place,
                            const std::function<Item(const YamlNode&, const Place&)>& read_item) {
    std::vector<Item> out;
    if (node.is_null()) return out;
    if (node.kind != YamlNode::Kind::sequence) place.fail(node, "expected a list");
    for (std::size_t i = 0; i < node.items.size(); ++i) out.push_back(read_item(node.items[i], place.item(i)));
    return out;
}

void require(const YamlNode& node, const Place& place, const std::string& value, const char* field) {
    if (value.empty()) place.fail(node, std::string("the field ") + field + " is required");
}

DeviceNode read_device_node(const YamlNode& node, const Place& place) {
    DeviceNode out;
    read_fields(
        node, place,
        {
            {"path", [&](auto& v, auto& p) { out.path = read_string(v, p); }},
            {"hostPath", [&](auto& v, auto& p) { out.host_path = read_string(v, p); }},
            {"type",
             [&](auto& v, auto& p) {
                 out.type = read_string(v, p);
                 if (!out.type.empty() && out.type != "c" && out.type != "b" && out.type != "u" && out.type != "p")
                     p.fail(v, "\"" + out.type + "\" is not a device type (c, b, u or p)");
             }},
            {"major",
             [&](auto& v, auto& p) {
                 if (!v.is_null()) out.major = read_integer(v, p, 0, uint32_max);
             }},
            {"minor",
             [&](auto& v, auto& p) {
                 if (!v.is_null()) out.minor = read_integer(v, p, 0, uint32_max);
             }},
            {"fileMode",
             [&](auto& v, auto& p) {
                 if (!v.is_null()) out.file_mode = read_integer(v, p, 0, 07777);
             }},
            {"permissions",
             [&](auto& v, auto& p) {
                 out.permissions = read_string(v, p);
                 if (out.permissions.find_first_not_of("rwm") != std::string::npos)
                     p.fail(v, "\"" + out.permissions + "\" is not a cgroup access (letters of rwm)");
             }},
            {"uid",
             [&](auto& v, auto& p) {
                 if (!v.is_null()) out.uid = read_integer(v, p, 0, uint32_max);
             }},
            {"gid",
             [&](auto& v, auto& p) {
                 if (!v.is_null()) out.gid = read_integer(v, p, 0, uint32_max);
             }},
        });
    require(node, place.at("path"), out.path, "path");
    return out;
}

Mount read_mount(const YamlNode& node, const Place& place) {
    Mount out;
    read_fields(node, place,
                {
                    {"hostPath", [&](auto& v, auto& p) { out.host_path = read_string(v, p); }},
                    {"containerPath", [&](auto& v, auto& p) { out.container_path = read_string(v, p); }},
                    {"type", [&](auto& v, auto& p) { out.type = read_string(v, p); }},
                    {"options", [&](auto& v, auto& p) { out.options = read_strings(v, p); }},
                });
    require(node, place.at("hostPath"), out.host_path, "hostPath");
    require(node, place.at("containerPath"), out.container_path, "containerPath");
    return out;
}

Hook read_hook(const YamlNode& node, const Place& place) {
    Hook out;
    read_fields(node, place,
                {
                    {"hookName",
                     [&](auto& v, auto& p) {
                         out.hook_name = read_string(v, p);
                         static const char* names[] = {"prestart",       "createRuntime", "createContainer",
                                                       "startContainer", "poststart",     "poststop"};
                         for (const char* name : names)
                             if (out.hook_name == name) return;
                         p.fail(v, "\"" + out.hook_name +
                                       "\" is not an OCI hook point (prestart, createRuntime, "
                                       "createContainer, startContainer, poststart, poststop)");
                     }},
                    {"path", [&](auto& v, auto& p) { out.path = read_string(v, p); }},
                    {"args", [&](auto& v, auto& p) { out.args = read_strings(v, p); }},
                    {"env", [&](auto& v, auto& p) { out.env = read_strings(v, p); }},
                    {"timeout",
                     [&](auto& v, auto& p) {
                         if (!v.is_null()) out.timeout = read_integer(v, p, 1, 86400);
                     }},
                });
    require(node, place.at("hookName"), out.hook_name, "hookName");
    require(node, place.at("path"), out.path, "path");
    return out;
}

ContainerEdits read_edits(const YamlNode& node, const Place& place) {
    ContainerEdits out;
    if (node.is_null()) return out;
    read_fields(node, place,
                {
                    {"env",
                     [&](auto& v, auto& p) {
                         out.env = read_strings(v, p);
                         for (const auto& entry : out.env)
                             if (entry.find('=') == std::string::npos || entry.starts_with('='))
                                 p.fail(v, "\"" + entry + "\" is not NAME=VALUE");
                     }},
                    {"deviceNodes",
                     [&](auto& v, auto& p) { out.device_nodes = read_list<DeviceNode>(v, p, read_device_node); }},
                    {"mounts", [&](auto& v, auto& p) { out.mounts = read_list<Mount>(v, p, read_mount); }},
                    {"hooks", [&](auto& v, auto& p) { out.hooks = read_list<Hook>(v, p, read_hook); }},
                    {"additionalGids",
                     [&](auto& v, auto& p) {
                         out.additional_gids = read_list<std::uint32_t>(v, p, [](auto& item, auto& where) {
                             return static_cast<std::uint32_t>(read_integer(item, where, 0, uint32_max));
                         });
                     }},
                    // Known to the specification; kept as names so that selecting a device that needs
                    // them is refused with a reason (selection.cpp) instead of half-applied.
                    {"intelRdt",
                     [&](auto& v, auto&) {
                         if (!v.is_null()) out.unsupported.push_back("intelRdt");
                     }},
                    {"netDevices",
                     [&](auto& v, auto&) {
                         if (!v.is_null() && !(v.kind == YamlNode::Kind::sequence && v.items.empty()))
                             out.unsupported.push_back("netDevices");
                     }},
                });
    return out;
}

Device read_device(const YamlNode& node, const Place& place) {
    Device out;
    bool has_edits = false;
    read_fields(node, place,
                {
                    {"name",
                     [&](auto& v, auto& p) {
                         out.name = read_string(v, p);
                         if (!is_valid_device_name(out.name))
                             p.fail(v, "\"" + out.name +
                                           "\" is not a device name (letters, digits, _ . : -, starting and "
                                           "ending with a letter or digit)");
                     }},
                    {"annotations", [&](auto& v, auto& p) { read_annotations(v, p, out.has_annotations); }},
                    {"containerEdits",
                     [&](auto& v, auto& p) {
                         out.edits = read_edits(v, p);
                         has_edits = true;
                     }},
                });
    require(node, place.at("name"), out.name, "name");
    if (!has_edits) place.at("containerEdits").fail(node, "the field containerEdits is required");
    return out;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; }

}  // namespace

bool is_valid_kind(const std::string& kind) {
    auto slash = kind.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == kind.size()) return false;
    for (std::size_t i = 0; i < kind.size(); ++i)
        if (i != slash && !is_name_char(kind[i])) return false;
    auto ends_ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    return ends_ok(kind.front()) && ends_ok(kind[slash - 1]) && ends_ok(kind[slash + 1]) && ends_ok(kind.back());
}

bool is_valid_device_name(const std::string& name) {
    if (name.empty() || !std::isalnum(static_cast<unsigned char>(name.front())) ||
        !std::isalnum(static_cast<unsigned char>(name.back())))
        return false;
    for (char c : name)
        if (!is_name_char(c) && c != ':') return false;
    return true;
}

Spec parse_spec(const std::string& text, const std::string& origin) {
    YamlNode root = parse_yaml(text, origin);
    Spec spec;
    spec.origin = origin;
    Place place{origin, ""};
    read_fields(root, place,
                {
                    {"cdiVersion", [&](auto& v, auto& p) { spec.cdi_version = read_string(v, p); }},
                    {"kind",
                     [&](auto& v, auto& p) {
                         spec.kind = read_string(v, p);
                         if (!is_valid_kind(spec.kind))
                             p.fail(v, "\"" + spec.kind + "\" is not a kind (vendor.com/class, e.g. nvidia.com/gpu)");
                     }},
                    {"annotations", [&](auto& v, auto& p) { read_annotations(v, p, spec.has_annotations); }},
                    {"devices", [&](auto& v, auto& p) { spec.devices = read_list<Device>(v, p, read_device); }},
                    {"containerEdits", [&](auto& v, auto& p) { spec.edits = read_edits(v, p); }},
                });
    require(root, place.at("cdiVersion"), spec.cdi_version, "cdiVersion");
    require(root, place.at("kind"), spec.kind, "kind");
    if (spec.devices.empty()) place.at("devices").fail(root, "a spec needs at least one device");
    for (std::size_t i = 0; i < spec.devices.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (spec.devices[i].name == spec.devices[j].name)
                throw UsageError(origin + ": device \"" + spec.devices[i].name + "\" is named twice");
    auto declared = parse_spec_version(spec.cdi_version, origin);
    auto needed = required_version(spec);
    if (declared < needed.version)
        throw UsageError(origin + ": cdiVersion " + spec.cdi_version + " is too low: " + needed.because +
                         " needs at least " + needed.version.text());
    return spec;
}

const Device* Spec::device(const std::string& name) const {
    for (const auto& d : devices)
        if (d.name == name) return &d;
    return nullptr;
}

}  // namespace trellis::agent::cdi
