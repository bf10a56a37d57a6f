// SPDX-License-Identifier: Apache-2.0
#include "agent/image/settings.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "agent/container/container_spec.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"

namespace trellis::agent {

namespace {

using nlohmann::json;

std::vector<std::string> strings(const json& config, const char* key) {
    std::vector<std::string> values;
    if (!config.contains(key) || config[key].is_null()) return values;
    if (!config[key].is_array()) throw ContainerError(std::string("the image's settings: ") + key + " is not a list");
    for (const auto& item : config[key]) {
        if (!item.is_string())
            throw ContainerError(std::string("the image's settings: ") + key + " holds something not a string");
        values.push_back(item.get<std::string>());
    }
    return values;
}

bool valid_name(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

// "/data" holds "/data" and "/data/x", not "/database".
bool at_or_under(const std::string& path, std::string folder) {
    while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
    return folder == "/" || path == folder || (path.starts_with(folder) && path[folder.size()] == '/');
}

}  // namespace

ImageSettings parse_image_settings(const std::string& text) {
    ImageSettings settings;
    if (text.empty()) return settings;
    json document = json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.is_object())
        throw ContainerError(
            "the image's settings are not a JSON object (accepted: what skopeo inspect --config prints)");
    const json& config = document.contains("config") ? document["config"] : document;
    if (!config.is_object()) throw ContainerError("the image's settings: \"config\" is not an object");
    for (const auto& entry : strings(config, "Env")) {
        auto equals = entry.find('=');
        if (equals == std::string::npos || !valid_name(entry.substr(0, equals)))
            throw ContainerError("the image's settings: Env entry '" + entry + "' is not NAME=VALUE");
        settings.env.emplace_back(entry.substr(0, equals), entry.substr(equals + 1));
    }
    if (config.contains("WorkingDir") && config["WorkingDir"].is_string())
        settings.working_dir = config["WorkingDir"].get<std::string>();
    if (!settings.working_dir.empty() && settings.working_dir[0] != '/')
        throw ContainerError("the image's settings: WorkingDir '" + settings.working_dir + "' is not absolute");
    settings.entrypoint = strings(config, "Entrypoint");
    return settings;
}

std::string one_line_settings(const std::string& text, const std::vector<std::string>& extra_env,
                              const std::vector<std::string>& notes) {
    parse_image_settings(text);
    json document = text.empty() ? json::object() : json::parse(text);
    if (!extra_env.empty()) {
        json& config = document.contains("config") ? document["config"] : document;
        if (!config.contains("Env") || config["Env"].is_null()) config["Env"] = json::array();
        for (const auto& entry : extra_env) config["Env"].push_back(entry);
    }
    if (!notes.empty()) document["trellis_notes"] = notes;
    parse_image_settings(document.dump());  // the added entries are held to the same rules
    return document.dump();
}

std::vector<std::string> settings_notes(const std::string& text) {
    if (text.empty()) return {};
    json document = json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.is_object()) return {};
    return strings(document, "trellis_notes");
}

std::string read_settings(int fd, const std::string& path) {
    if (fd < 0) return "";
    std::string text;
    char buffer[65536];
    ssize_t n;
    while ((n = ::pread(fd, buffer, sizeof buffer, off_t(text.size()))) > 0 && text.size() <= settings_limit)
        text.append(buffer, std::size_t(n));
    if (n < 0 || text.size() > settings_limit)
        throw ContainerError(
            "cannot read the image's settings " + path + ": " +
            (n < 0 ? std::string(std::strerror(errno))
                   : "too large (at most " + std::to_string(settings_limit >> 20) + " MiB of JSON is accepted)"));
    return text;
}

std::string read_settings_file(const std::string& path) {
    if (path.empty()) return "";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) return "";
        throw ContainerError("cannot read the image's settings " + path + ": " + std::strerror(errno));
    }
    try {
        std::string text = read_settings(fd, path);
        ::close(fd);
        return text;
    } catch (...) {
        ::close(fd);
        throw;
    }
}

std::vector<std::string> parse_env_names(const std::string& list) {
    std::vector<std::string> names;
    if (list.empty()) return names;
    for (std::size_t start = 0;;) {
        auto end = list.find(',', start);
        std::string name = list.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!valid_name(name))
            throw UsageError("'" + name + "' in '" + list +
                             "' is not a variable name (accepted: NAME,NAME,... with letters, digits and '_')");
        names.push_back(name);
        if (end == std::string::npos) return names;
        start = end + 1;
    }
}

bool set_for_the_task(const std::string& name, const std::function<bool(const std::string&)>& task_has) {
    for (const char* prefix : {"SLURM_", "SLURMD_", "SRUN_", "TRELLIS_", "PMIX_", "PMI_"})
        if (name.starts_with(prefix)) return true;
    for (const env::Variable* variable : env::all())
        if (name == variable->name) return task_has(name);
    return false;
}

std::vector<std::pair<std::string, std::string>> image_env_for_task(
    const ImageSettings& settings, const SettingsChoices& choices,
    const std::function<bool(const std::string&)>& task_has) {
    std::vector<std::pair<std::string, std::string>> taken;
    for (const auto& [name, value] : settings.env) {
        bool kept = false;
        for (const auto& keep : choices.keep_env) kept = kept || keep == name;
        if (!kept && !set_for_the_task(name, task_has)) taken.emplace_back(name, value);
    }
    return taken;
}

std::vector<std::string> task_command(const ImageSettings& settings, const SettingsChoices& choices,
                                      std::vector<std::string> command) {
    if (!choices.entrypoint || settings.entrypoint.empty()) return command;
    std::vector<std::string> full = settings.entrypoint;
    full.insert(full.end(), command.begin(), command.end());
    return full;
}

std::vector<std::string> working_directory_candidates(const std::string& job_dir,
                                                      const std::vector<std::string>& mount_destinations,
                                                      const ImageSettings& settings) {
    std::vector<std::string> candidates;
    bool mounted = false;
    for (const auto& destination : mount_destinations) mounted = mounted || at_or_under(job_dir, destination);
    if (!job_dir.empty() && mounted) candidates.push_back(job_dir);
    if (!settings.working_dir.empty()) candidates.push_back(settings.working_dir);
    if (!job_dir.empty() && !mounted) candidates.push_back(job_dir);
    candidates.push_back("/");
    return candidates;
}

TaskInImage task_in_image(const std::string& settings_json, const SettingsChoices& choices, const std::string& job_dir,
                          const std::vector<std::string>& mount_destinations,
                          const std::function<bool(const std::string&)>& task_has, std::vector<std::string> command) {
    ImageSettings settings = parse_image_settings(settings_json);
    TaskInImage task;
    task.env = image_env_for_task(settings, choices, task_has);
    task.directories = working_directory_candidates(job_dir, mount_destinations, settings);
    task.command = task_command(settings, choices, std::move(command));
    return task;
}

std::string start_directory_note(const std::string& started, const std::string& job_dir,
                                 const std::string& settings_json, const std::string& image) {
    if (started != "/" || job_dir.empty() || job_dir == "/") return "";
    std::string working_dir = parse_image_settings(settings_json).working_dir;
    if (working_dir == "/") return "";
    return "the working directory " + job_dir + " is not in the image " + image +
           (working_dir.empty() ? "" : ", nor is its WorkingDir " + working_dir) +
           ": tasks start in /; to keep it, mount it at the same path (--trellis-mounts=" + job_dir + ")";
}

}  // namespace trellis::agent
