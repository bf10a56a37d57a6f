// SPDX-License-Identifier: Apache-2.0
#include "slurm/slurm_config.hpp"

#include <glob.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <slurm/slurm.h>

#include "common/error.hpp"

namespace trellis::slurm {
namespace {

// One line of a Slurm configuration file: its Key=Value pairs, keys folded to lower case
// (Slurm's keys are case-insensitive), in order.
using Record = std::vector<std::pair<std::string, std::string>>;

struct Line {
    std::string origin;  // file:line
    Record record;
};

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

Record parse_record(const std::string& text) {
    Record record;
    std::istringstream in(text);
    for (std::string word; in >> word;) {
        size_t eq = word.find('=');
        std::string key = lower(word.substr(0, eq));
        std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        record.emplace_back(key, value);
    }
    return record;
}

// The file's records, comments removed, `Include PATH` followed (relative to the file).
void read_lines(const std::filesystem::path& path, std::vector<Line>& lines, int depth = 0) {
    std::ifstream in(path);
    if (!in || depth > 8) return;
    int number = 0;
    for (std::string text; std::getline(in, text);) {
        ++number;
        text = text.substr(0, text.find('#'));
        std::istringstream words(text);
        std::string first, rest;
        words >> first >> rest;
        if (strcasecmp(first.c_str(), "include") == 0) {
            std::filesystem::path included = rest;
            if (included.is_relative()) included = path.parent_path() / included;
            read_lines(included, lines, depth + 1);
            continue;
        }
        Record record = parse_record(text);
        if (!record.empty()) lines.push_back({path.string() + ":" + std::to_string(number), std::move(record)});
    }
}

std::vector<Line> read_file(const std::string& path) {
    std::vector<Line> lines;
    read_lines(path, lines);
    return lines;
}

const std::string* value_of(const Record& record, const std::string& key) {
    for (const auto& [k, v] : record)
        if (k == key) return &v;
    return nullptr;
}

// Whether a NodeName= value (a host list, or absent: every node) names the node.
bool names_node(const Line& line, const std::string& node) {
    const std::string* names = value_of(line.record, "nodename");
    if (!names) return true;
    try {
        auto hosts = expand_hostlist(*names);
        return std::find(hosts.begin(), hosts.end(), node) != hosts.end();
    } catch (const UsageError& e) {
        throw UsageError(line.origin + ": NodeName: " + e.what());
    }
}

// plugstack.conf's lines as words, comments removed, `include GLOB` followed.
void plugstack_words(const std::filesystem::path& path, std::vector<std::vector<std::string>>& lines, int depth = 0) {
    std::ifstream in(path);
    if (!in || depth > 8) return;
    for (std::string text; std::getline(in, text);) {
        std::istringstream words(text.substr(0, text.find('#')));
        std::vector<std::string> line;
        for (std::string word; words >> word;) line.push_back(word);
        if (line.size() >= 2 && lower(line[0]) == "include") {
            glob_t found{};
            std::filesystem::path pattern = line[1];
            if (pattern.is_relative()) pattern = path.parent_path() / pattern;
            if (::glob(pattern.c_str(), 0, nullptr, &found) == 0)
                for (size_t i = 0; i < found.gl_pathc; ++i) plugstack_words(found.gl_pathv[i], lines, depth + 1);
            ::globfree(&found);
        } else if (!line.empty()) {
            lines.push_back(std::move(line));
        }
    }
}

}  // namespace

std::string plugstack_path(const std::string& slurm_conf) {
    auto files = SlurmConfigFiles::beside(slurm_conf);
    for (const Line& line : read_file(files.slurm_conf))
        if (const std::string* path = value_of(line.record, "plugstackconfig")) return *path;
    return (std::filesystem::path(files.slurm_conf).parent_path() / "plugstack.conf").string();
}

std::string task_prolog_path(const std::string& slurm_conf) {
    for (const Line& line : read_file(SlurmConfigFiles::beside(slurm_conf).slurm_conf))
        if (const std::string* path = value_of(line.record, "taskprolog")) return *path;
    return "";
}

long credential_lifetime(const std::string& slurm_conf) {
    for (const Line& line : read_file(SlurmConfigFiles::beside(slurm_conf).slurm_conf))
        if (const std::string* info = value_of(line.record, "authinfo")) {
            std::stringstream options(*info);
            for (std::string option; std::getline(options, option, ',');)
                if (option.starts_with("cred_expire=")) {
                    long seconds = std::strtol(option.c_str() + std::strlen("cred_expire="), nullptr, 10);
                    if (seconds > 0) return seconds;
                }
        }
    return 120;
}

std::vector<PlugstackLine> read_plugstack(const std::string& path) {
    std::vector<std::vector<std::string>> lines;
    plugstack_words(path, lines);
    std::vector<PlugstackLine> plugins;
    for (auto& words : lines) {
        if (words.size() < 2 || (words[0] != "required" && words[0] != "optional")) continue;
        plugins.push_back({words[0] == "optional", words[1], std::vector<std::string>(words.begin() + 2, words.end())});
    }
    return plugins;
}

SlurmConfigFiles SlurmConfigFiles::beside(const std::string& slurm_conf) {
    std::filesystem::path conf = slurm_conf.empty() ? "/etc/slurm/slurm.conf" : slurm_conf;
    return {conf.string(), (conf.parent_path() / "gres.conf").string(), (conf.parent_path() / "cgroup.conf").string(),
            (conf.parent_path() / "mpi.conf").string()};
}

std::string slurm_conf_from_environment() {
    const char* path = std::getenv("SLURM_CONF");
    return path ? path : "";
}

std::string pmix_client_tmpdir_base(const std::string& slurm_conf) {
    for (const Line& line : read_file(SlurmConfigFiles::beside(slurm_conf).mpi_conf))
        if (const std::string* base = value_of(line.record, "pmixclitmpdirbase")) return *base;
    return "";
}

std::vector<std::string> expand_hostlist(const std::string& list) {
    // auto: hostlist_t is a pointer in Slurm 22.05 and the struct itself since 23.11, whose
    // hostlist calls take and return hostlist_t * (slurm.h, commits ba44a52602 and 1085bf6a9b).
    auto hosts = slurm_hostlist_create(list.c_str());
    if (!hosts) throw UsageError("'" + list + "' is not a host list libslurm can expand");
    std::vector<std::string> names;
    while (char* name = slurm_hostlist_shift(hosts)) {
        names.emplace_back(name);
        std::free(name);
    }
    slurm_hostlist_destroy(hosts);
    return names;
}

GresGpus read_gres_gpus(const std::string& gres_conf, const std::string& node) {
    GresGpus gpus;
    bool global_autodetect = false, node_autodetect = false, node_autodetect_given = false;
    // Slurm takes the lines for every node before those naming nodes (gres.c), each in order.
    std::vector<Line> lines = read_file(gres_conf), ordered;
    for (bool for_all : {true, false})
        for (const Line& line : lines)
            if ((value_of(line.record, "nodename") == nullptr) == for_all) ordered.push_back(line);
    for (const Line& line : ordered) {
        if (const std::string* detect = value_of(line.record, "autodetect")) {
            bool on = lower(*detect) == "nvml" || lower(*detect) == "rsmi";
            if (!value_of(line.record, "nodename"))
                global_autodetect = on;
            else if (names_node(line, node))
                node_autodetect = on, node_autodetect_given = true;
        }
        const std::string* name = value_of(line.record, "name");
        if (!name || lower(*name) != "gpu" || !names_node(line, node)) continue;
        gpus.configured = true;
        const std::string* file = value_of(line.record, "file");
        if (!file) file = value_of(line.record, "files");  // Slurm's other spelling
        // MultipleFiles: several files make one GPU (one gres index); its /dev/nvidiaN stands for it.
        const std::string* several = value_of(line.record, "multiplefiles");
        if (!file && !several) continue;
        try {
            auto paths = expand_hostlist(file ? *file : *several);
            if (!file) {
                auto gpu = std::find_if(paths.begin(), paths.end(),
                                        [](const std::string& p) { return device_number_of(p) >= 0; });
                paths = {gpu == paths.end() ? paths.front() : *gpu};
            }
            for (auto& path : paths) gpus.files.push_back(path);
        } catch (const UsageError& e) {
            throw UsageError(line.origin + ": File: " + e.what());
        }
    }
    gpus.autodetect = node_autodetect_given ? node_autodetect : global_autodetect;
    gpus.configured = gpus.configured || gpus.autodetect;
    return gpus;
}

bool devices_constrained(const SlurmConfigFiles& files) {
    bool cgroup_task = false, constrain = false;
    for (const Line& line : read_file(files.slurm_conf))
        if (const std::string* plugins = value_of(line.record, "taskplugin"))
            cgroup_task = lower(*plugins).find("cgroup") != std::string::npos;
    for (const Line& line : read_file(files.cgroup_conf))
        if (const std::string* value = value_of(line.record, "constraindevices"))
            constrain = lower(*value) == "yes" || lower(*value) == "true" || *value == "1" || lower(*value) == "up";
    return cgroup_task && constrain;
}

std::vector<std::string> node_addresses(const std::string& slurm_conf, const std::vector<std::string>& nodes) {
    std::vector<std::string> addresses = nodes;
    std::vector<bool> found(nodes.size(), false);
    for (const Line& line : read_file(slurm_conf)) {
        const std::string* names = value_of(line.record, "nodename");
        // NodeAddr, else NodeHostname, else the name: Slurm's defaults.
        const std::string* given = value_of(line.record, "nodeaddr");
        if (!given) given = value_of(line.record, "nodehostname");
        if (!names || !given || lower(*names) == "default") continue;
        auto hosts = expand_hostlist(*names);
        auto addrs = expand_hostlist(*given);
        for (size_t n = 0; n < nodes.size(); ++n) {
            auto at = std::find(hosts.begin(), hosts.end(), nodes[n]);
            if (found[n] || at == hosts.end()) continue;
            size_t index = static_cast<size_t>(at - hosts.begin());
            if (addrs.size() == hosts.size())
                addresses[n] = addrs[index], found[n] = true;
            else if (addrs.size() == 1)
                addresses[n] = addrs.front(), found[n] = true;
        }
    }
    return addresses;
}

std::string node_address(const std::string& slurm_conf, const std::string& node) {
    return node_addresses(slurm_conf, {node}).front();
}

int device_number_of(const std::string& file) {
    size_t end = file.size(), start = end;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(file[start - 1]))) --start;
    return start == end ? -1 : std::stoi(file.substr(start));
}

}  // namespace trellis::slurm
