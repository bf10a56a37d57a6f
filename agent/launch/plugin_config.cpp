// SPDX-License-Identifier: Apache-2.0
#include "agent/launch/plugin_config.hpp"

#include <filesystem>

#include "slurm/slurm_config.hpp"

namespace trellis::agent {
namespace {

// The plugin's file name in plugstack.conf, wherever it is installed.
constexpr const char* plugin_file = "spank_trellis.so";

}  // namespace

AgentConfig agent_config(const std::string& explicit_path, const std::string& slurm_conf) {
    if (!explicit_path.empty()) return {config::load_agent_config(explicit_path), "--config " + explicit_path};
    std::string plugstack = slurm::plugstack_path(slurm_conf);
    for (const auto& line : slurm::read_plugstack(plugstack)) {
        if (std::filesystem::path(line.plugin).filename() != plugin_file) continue;
        std::string arguments;
        for (const auto& arg : line.args) arguments += " " + arg;
        return {config::load_config(line.args, TRELLIS_CONFIG_PATH),
                "the plugin's line in " + plugstack + " (" + line.plugin + arguments + ")"};
    }
    auto config = config::load_agent_config("");
    return {config, config.path.empty() ? "defaults (no trellis.toml, no plugstack.conf line)" : config.path};
}

}  // namespace trellis::agent
