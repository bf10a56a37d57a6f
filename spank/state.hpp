// SPDX-License-Identifier: Apache-2.0
// What the plugin remembers within one srun, sbatch or slurmstepd process: the configuration,
// the user's choices, the node's plan (computed once per node per step in user_init) and a
// user error held until task_init, where the user gets to see it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/binding/wireup.hpp"
#include "config/config.hpp"
#include "agent/container/held_container.hpp"
#include "agent/image/broadcast.hpp"
#include "spank/options.hpp"
#include "topology/plan.hpp"

namespace trellis::spank {

using config::BindingConfig;
using config::Config;
using config::ConfigError;
using config::load_config;

struct PluginState {
    Config config;
    UserChoices choices;
    bool bind_given = false, hca_given = false, verbose_given = false;  // on the command line
    bool image_given = false, mounts_given = false;
    bool writable_given = false, env_given = false, entrypoint_given = false;
    bool gpus_given = false, memory_given = false, wireup_given = false;
    std::optional<topology::Plan> plan;
    std::string held_error;
    // The configuration could not be read and the plugin is optional: it does nothing.
    bool disabled = false;
    bool user_cpu_bind = false;  // Slurm's --cpu-bind was given: it wins over ours
    bool user_gpu_bind = false;  // likewise --gpu-bind
    unsigned local_tasks = 0;
    // The step's layout for the frameworks' variables (wireup.hpp); rank and local rank are
    // filled in per task.
    std::optional<agent::StepLayout> layout;
    agent::WireupChoice wireup;  // the user's choice, else the configured default
    // The step's container on this node, made in user_init; forked tasks inherit it.
    std::optional<agent::HeldContainer> container;
    std::string container_error;               // why there is none: every task says so and exits
    std::string image_as_asked;                // a registry image's tag, when choices.image is its pinned form
    std::optional<agent::StagedImage> staged;  // srun: the image it imported, to send to the nodes
};

PluginState& state();

// One line to Slurm's log (and, in srun or a task, the user's terminal), prefixed "trellis: ".
void log_error(const std::string& message);
void log_info(const std::string& message);

}  // namespace trellis::spank
