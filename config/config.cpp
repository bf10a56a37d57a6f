// SPDX-License-Identifier: Apache-2.0
#include "config/config.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <toml++/toml.h>

#include "common/cli.hpp"
#include "common/error.hpp"

namespace trellis::config {
namespace {

// A value as either source gives it: TOML has types, plugstack.conf only strings, so only
// there may a string stand for a list ("a,b") or a boolean ("yes").
struct RawValue {
    enum Kind { string, boolean, list, integer, other } kind = other;
    std::string text;
    bool flag = false;
    std::vector<std::string> items;
    bool from_plugstack = false;
    long number = 0;
};

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> items = cli::split(text);
    std::erase(items, "");
    return items;
}

std::string as_string(const RawValue& v, const char* what) {
    if (v.kind != RawValue::string) throw UsageError(std::string("must be ") + what);
    return v.text;
}

std::string as_path(const RawValue& v) {
    std::string path = as_string(v, "an absolute path in quotes");
    if (path.empty() || path[0] != '/') throw UsageError("'" + path + "' is not an absolute path");
    return path;
}

bool as_bool(const RawValue& v) {
    if (v.kind == RawValue::boolean) return v.flag;
    if (v.kind == RawValue::string && !v.from_plugstack)
        throw UsageError("must be true or false, without quotes (a boolean, not the string \"" + v.text + "\")");
    if (v.kind == RawValue::string) {
        if (v.text == "true" || v.text == "yes" || v.text == "1") return true;
        if (v.text == "false" || v.text == "no" || v.text == "0") return false;
    }
    throw UsageError("must be true or false");
}

long as_count(const RawValue& v, const char* what) {
    if (v.kind == RawValue::integer && v.number >= 0) return v.number;
    if (v.kind == RawValue::string && v.from_plugstack) {
        std::size_t used = 0;
        long number = -1;
        try {
            number = std::stol(v.text, &used);
        } catch (const std::exception&) {}
        if (used == v.text.size() && number >= 0) return number;
    }
    throw UsageError(std::string("must be ") + what + " (a whole number >= 0, without quotes)");
}

std::vector<std::string> as_list(const RawValue& v, const char* what) {
    if (v.kind == RawValue::list) return v.items;
    if (v.kind == RawValue::string && v.from_plugstack) return split_commas(v.text);  // a,b,c
    if (v.kind == RawValue::string)
        throw UsageError(std::string("must be a list of ") + what + " in brackets, e.g. [\"" + v.text +
                         "\"], not a string");
    throw UsageError(std::string("must be a list of ") + what + " in brackets, e.g. [\"...\"]");
}

template <typename Section>
using Setter = std::function<void(Section&, const RawValue&)>;

const std::map<std::string, Setter<BindingConfig>>& binding_keys() {
    static const std::map<std::string, Setter<BindingConfig>> keys = {
        {"policy",
         [](BindingConfig& c, const RawValue& v) {
             c.policy = topology::parse_policy(as_string(v, "a string: closest or none"));
         }},
        {"topology_xml",
         [](BindingConfig& c, const RawValue& v) {
             c.topology_xml = as_string(v, "a string: the path of an hwloc XML file");
         }},
        {"hca_include", [](BindingConfig& c, const RawValue& v) { c.hca_include = as_list(v, "glob patterns"); }},
        {"hca_exclude", [](BindingConfig& c, const RawValue& v) { c.hca_exclude = as_list(v, "glob patterns"); }},
        {"nvidia_proc",
         [](BindingConfig& c, const RawValue& v) {
             c.nvidia_proc = as_string(v, "a string: the NVIDIA driver's proc folder");
         }},
        {"memory",
         [](BindingConfig& c, const RawValue& v) {
             c.memory = parse_memory_policy(as_string(v, "a string: bind, preferred or none"));
         }},
        {"share_gpus", [](BindingConfig& c, const RawValue& v) { c.share_gpus = as_bool(v); }},
        {"require_active", [](BindingConfig& c, const RawValue& v) { c.require_active = as_bool(v); }},
        {"smt", [](BindingConfig& c, const RawValue& v) { c.smt = as_bool(v); }},
        {"export",
         [](BindingConfig& c, const RawValue& v) {
             auto names = as_list(v, "variable names");
             const auto& known = exportable_variables();
             for (const auto& name : names)
                 if (std::find(known.begin(), known.end(), name) == known.end()) {
                     std::string accepted;
                     for (const auto& k : known) accepted += (accepted.empty() ? "" : ", ") + k;
                     throw UsageError("'" + name + "' is not a variable trellis sets (accepted: " + accepted + ")");
                 }
             c.exported = names;
         }},
    };
    return keys;
}

const std::map<std::string, Setter<ContainerConfig>>& container_keys() {
    static const std::map<std::string, Setter<ContainerConfig>> keys = {
        // Kept so that older files still load: containers need neither any more.
        {"runtime", [](ContainerConfig&, const RawValue&) {}},
        {"run_dir", [](ContainerConfig&, const RawValue&) {}},
        {"apptainer", [](ContainerConfig& c, const RawValue& v) { c.apptainer = as_path(v); }},
        {"allowed_images",
         [](ContainerConfig& c, const RawValue& v) { c.allowed_images = as_list(v, "glob patterns"); }},
        {"allowed_mounts",
         [](ContainerConfig& c, const RawValue& v) { c.allowed_mounts = as_list(v, "path prefixes"); }},
        {"agent", [](ContainerConfig& c, const RawValue& v) { c.agent = as_path(v); }},
        {"allowed_registries",
         [](ContainerConfig& c, const RawValue& v) {
             c.allowed_registries = as_list(v, "patterns of host[:port]/repository");
         }},
        {"insecure_registries",
         [](ContainerConfig& c, const RawValue& v) { c.insecure_registries = as_list(v, "host[:port] entries"); }},
        {"allow_user_images", [](ContainerConfig& c, const RawValue& v) { c.allow_user_images = as_bool(v); }},
        {"image_cache", [](ContainerConfig& c, const RawValue& v) { c.image_cache = as_path(v); }},
        {"image_cache_gib",
         [](ContainerConfig& c, const RawValue& v) { c.image_cache_gib = as_count(v, "GiB per user"); }},
        {"image_broadcast", [](ContainerConfig& c, const RawValue& v) { c.image_broadcast = as_bool(v); }},
        {"digest_lifetime", [](ContainerConfig& c, const RawValue& v) { c.digest_lifetime = as_count(v, "seconds"); }},
        {"cdi_dirs", [](ContainerConfig& c, const RawValue& v) { c.cdi_dirs = as_list(v, "folders"); }},
        {"allowed_cdi_hooks",
         [](ContainerConfig& c, const RawValue& v) { c.allowed_cdi_hooks = as_list(v, "hook programs"); }},
        {"skopeo", [](ContainerConfig& c, const RawValue& v) { c.skopeo = as_path(v); }},
        {"umoci", [](ContainerConfig& c, const RawValue& v) { c.umoci = as_path(v); }},
        {"mksquashfs", [](ContainerConfig& c, const RawValue& v) { c.mksquashfs = as_path(v); }},
        {"squashfuse", [](ContainerConfig& c, const RawValue& v) { c.squashfuse = as_path(v); }},
        {"fuse_overlayfs", [](ContainerConfig& c, const RawValue& v) { c.fuse_overlayfs = as_path(v); }},
        {"namespaces",
         [](ContainerConfig& c, const RawValue& v) {
             c.namespaces = as_list(v, "a list of namespaces: mount, ipc, uts");
             for (const auto& ns : c.namespaces)
                 if (ns != "mount" && ns != "ipc" && ns != "uts")
                     throw UsageError("'" + ns +
                                      "' is not a namespace a task may join (accepted: mount, "
                                      "ipc, uts; the network and PIDs stay the host's)");
             if (std::find(c.namespaces.begin(), c.namespaces.end(), "mount") == c.namespaces.end())
                 throw UsageError("must include \"mount\": the image is the container's mount namespace");
         }},
    };
    return keys;
}

// "20000-29999": at least as many ports as a node runs tasks, above the privileged ones.
void parse_port_range(const std::string& text, WireupConfig& c) {
    int first = 0, last = 0;
    char dash = 0, extra = 0;
    std::istringstream in(text);
    if (!(in >> first >> dash >> last) || dash != '-' || in >> extra || first < 1024 || last > 65535 ||
        last - first < 255)
        throw UsageError("'" + text +
                         "' is not a port range (accepted: FIRST-LAST within 1024-65535, "
                         "at least 256 ports, e.g. \"20000-29999\")");
    c.port_first = first, c.port_last = last;
}

const std::map<std::string, Setter<WireupConfig>>& wireup_keys() {
    static const std::map<std::string, Setter<WireupConfig>> keys = {
        {"frameworks", [](WireupConfig& c, const RawValue& v) { c.frameworks = as_bool(v); }},
        {"port_range",
         [](WireupConfig& c, const RawValue& v) { parse_port_range(as_string(v, "a string: FIRST-LAST"), c); }},
    };
    return keys;
}

template <typename Section>
std::string key_names(const std::map<std::string, Setter<Section>>& keys) {
    std::string names;
    for (const auto& [name, setter] : keys) names += (names.empty() ? "" : ", ") + name;
    return names;
}

RawValue raw_from_toml(const toml::node& node) {
    RawValue v;
    if (auto s = node.as_string()) {
        v.kind = RawValue::string;
        v.text = s->get();
    } else if (auto b = node.as_boolean()) {
        v.kind = RawValue::boolean;
        v.flag = b->get();
    } else if (auto n = node.as_integer()) {
        v.kind = RawValue::integer;
        v.number = long(n->get());
    } else if (auto a = node.as_array()) {
        v.kind = RawValue::list;
        for (const auto& item : *a) {
            auto s = item.as_string();
            if (!s) {
                v.kind = RawValue::other;  // a list of something other than strings
                break;
            }
            v.items.push_back(s->get());
        }
    }
    return v;
}

template <typename Section>
void apply_table(const toml::table& table, const std::string& origin, const std::string& name,
                 const std::map<std::string, Setter<Section>>& keys, Section& section) {
    for (const auto& [key, node] : table) {
        std::string where = origin + ":" + std::to_string(node.source().begin.line) + ": [" + name + "] key '" +
                            std::string(key.str()) + "'";
        auto it = keys.find(std::string(key.str()));
        if (it == keys.end()) throw ConfigError(where + " is unknown (accepted: " + key_names(keys) + ")");
        try {
            it->second(section, raw_from_toml(node));
        } catch (const UsageError& e) {
            throw ConfigError(where + ": " + e.what());
        }
    }
}

}  // namespace

const std::vector<std::string>& exportable_variables() {
    static const std::vector<std::string> names = {
        "CUDA_VISIBLE_DEVICES",           "ROCR_VISIBLE_DEVICES", "NCCL_IB_HCA",    "UCX_NET_DEVICES",
        "OMPI_MCA_btl_openib_if_include", "NCCL_SOCKET_IFNAME",   "OMP_NUM_THREADS"};
    return names;
}

Config parse_config_text(std::string_view text, const std::string& origin) {
    Config config;
    config.path = origin;
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        throw ConfigError(origin + ":" + std::to_string(e.source().begin.line) + ": not valid TOML (" +
                          std::string(e.description()) +
                          "): each setting is key = value, strings in double quotes (policy = \"closest\"), "
                          "lists in brackets (hca_exclude = [\"mlx5_bond*\"]), true/false bare");
    }
    for (const auto& [key, node] : root) {
        std::string name(key.str());
        std::string where = origin + ":" + std::to_string(node.source().begin.line);
        const toml::table* table = node.as_table();
        if (!table || (name != "binding" && name != "container" && name != "wireup"))
            throw ConfigError(where + ": unknown " + (table ? "table [" + name + "]" : "key '" + name + "'") +
                              " (accepted: [binding], [container], [wireup])");
        if (name == "binding")
            apply_table(*table, origin, name, binding_keys(), config.binding);
        else if (name == "container")
            apply_table(*table, origin, name, container_keys(), config.container);
        else
            apply_table(*table, origin, name, wireup_keys(), config.wireup);
    }
    return config;
}

Config load_config(const std::vector<std::string>& plugstack_args, const std::string& default_path) {
    std::string path = default_path;
    bool explicit_path = false;
    std::vector<std::pair<std::string, std::string>> overrides;
    for (const auto& arg : plugstack_args) {
        size_t eq = arg.find('=');
        if (eq == std::string::npos || eq == 0)
            throw ConfigError("plugstack.conf argument '" + arg + "' is not key=value (accepted: config=PATH, " +
                              key_names(binding_keys()) + ")");
        std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
        if (key == "config") {
            path = value;
            explicit_path = true;
        } else {
            overrides.emplace_back(key, value);
        }
    }

    Config config;
    std::error_code ec;
    if (explicit_path || std::filesystem::exists(path, ec)) {
        std::ifstream in(path);
        if (!in)
            throw ConfigError(path + ": cannot read the trellis configuration: " + std::string(std::strerror(errno)));
        std::stringstream text;
        text << in.rdbuf();
        config = parse_config_text(text.str(), path);
        config.container.origin = path;
    }

    const auto& keys = binding_keys();
    for (const auto& [key, value] : overrides) {
        std::string where = "plugstack.conf argument '" + key + "=" + value + "'";
        auto it = keys.find(key);
        if (it == keys.end()) throw ConfigError(where + ": unknown key (accepted: config, " + key_names(keys) + ")");
        try {
            it->second(config.binding, RawValue{RawValue::string, value, false, {}, true});
        } catch (const UsageError& e) {
            throw ConfigError(where + ": " + e.what());
        }
    }
    return config;
}

std::string installed_agent_path() { return TRELLIS_AGENT_PATH; }

std::string memory_policy_name(MemoryPolicy policy) {
    return policy == MemoryPolicy::bind ? "bind" : policy == MemoryPolicy::preferred ? "preferred" : "none";
}

MemoryPolicy parse_memory_policy(const std::string& name) {
    if (name == "bind") return MemoryPolicy::bind;
    if (name == "preferred") return MemoryPolicy::preferred;
    if (name == "none") return MemoryPolicy::none;
    throw UsageError("'" + name + "' is not a memory policy (accepted: bind, preferred, none)");
}

Config load_agent_config(const std::string& path) {
    return load_config(path.empty() ? std::vector<std::string>{} : std::vector<std::string>{"config=" + path},
                       TRELLIS_CONFIG_PATH);
}

}  // namespace trellis::config
