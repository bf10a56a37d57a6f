#include "agent/container/singularity_runtime.hpp"

#include <nlohmann/json.hpp>

namespace trellis::agent {

std::vector<std::string> SingularityRuntime::start_command(const ContainerSpec& spec) const {
    // --contain: a private /tmp and a minimal /dev (the devices are bound in); no PID
    // namespace, so that tasks joining the mount namespace see a /proc that matches them.
    std::vector<std::string> argv = {program_, "instance", "start", "--contain", "--no-home"};
    for (const auto& device : spec.devices) argv.insert(argv.end(), {"--bind", device + ":" + device});
    for (const auto& mount : spec.mounts) argv.insert(argv.end(), {"--bind", format_mount(mount)});
    argv.insert(argv.end(), {spec.image, spec.id});
    return argv;
}

pid_t SingularityRuntime::start(const ContainerSpec& spec, const std::filesystem::path&) {
    auto started = run_command(start_command(spec), spec.user);
    if (!started.ok()) throw RuntimeError(started.describe(program_ + " instance start " + spec.id));
    auto listed = run_command({program_, "instance", "list", "--json", spec.id}, spec.user);
    if (!listed.ok()) throw RuntimeError(listed.describe(program_ + " instance list " + spec.id));
    try {
        auto answer = nlohmann::json::parse(listed.output);  // kept: the loop below refers into it
        for (const auto& instance : answer.at("instances"))
            if (instance.at("instance") == spec.id) return instance.at("pid").get<pid_t>();
    } catch (const nlohmann::json::exception& error) {
        throw RuntimeError(program_ + " instance list --json: unexpected answer: " + error.what());
    }
    throw RuntimeError(program_ + " instance list: instance " + spec.id + " is not running (it listed: " + listed.output +
                       ")");
}

void SingularityRuntime::stop(const std::string& id, const Identity& user, const std::filesystem::path&) {
    auto result = run_command({program_, "instance", "stop", "--force", id}, user);
    if (!result.ok() && result.errors.find("no instance") == std::string::npos &&
        result.errors.find("not found") == std::string::npos)
        throw RuntimeError(result.describe(program_ + " instance stop " + id));
}

}  // namespace trellis::agent
