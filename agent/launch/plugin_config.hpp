// SPDX-License-Identifier: Apache-2.0
// The configuration trellis-agent launch plans with: the plugin's own. An admin configures the
// plugin in plugstack.conf (`config=PATH` and `key=value` overrides such as topology_xml= or
// nvidia_proc=); an agent that read only trellis.toml would plan otherwise than the plugin
// on the same node, so it finds the plugin's line as Slurm does (slurm.conf's
// PlugStackConfig, else plugstack.conf beside slurm.conf, `include` files followed) and
// merges it as the plugin does.
#pragma once

#include <string>

#include "config/config.hpp"

namespace trellis::agent {

struct AgentConfig {
    config::Config config;
    std::string source;  // where it came from, for the verbose report
};

// `explicit_path` (--config) alone when given; else the trellis line of the plugstack.conf
// that `slurm_conf` ("" for Slurm's default) names; else the installed trellis.toml.
// Throws config::ConfigError naming the file, line and key.
AgentConfig agent_config(const std::string& explicit_path, const std::string& slurm_conf);

}  // namespace trellis::agent
