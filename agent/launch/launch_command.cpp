// SPDX-License-Identifier: Apache-2.0
#include "agent/launch/launch_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "agent/binding/binding_set.hpp"
#include "agent/binding/node_paths.hpp"
#include "agent/binding/step_plan.hpp"
#include "agent/container/cdi/step_edits.hpp"
#include "agent/binding/wireup.hpp"
#include "config/config.hpp"
#include "agent/container/devices.hpp"
#include "agent/image/policy.hpp"
#include "agent/image/registry_digest.hpp"
#include "agent/container/step_container.hpp"
#include "agent/launch/launch_options.hpp"
#include "agent/launch/plugin_config.hpp"
#include "agent/launch/rank_launcher.hpp"
#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/host.hpp"
#include "common/step_secret.hpp"
#include "slurm/slurm_config.hpp"
#include "topology/plan.hpp"
#include "topology/report.hpp"

namespace trellis::agent {

namespace {

// The secret the ranks prove to each other: the step's when srun's plugin made one or the
// caller gave one (every node's launch must hand its ranks the same), a new one when this
// node's ranks are the whole job.
std::string secret_for_ranks(const NodePlace& place) {
    if (const char* given = env_value(env::secret.name)) {
        parse_step_secret(given);  // refused here, before any rank starts, when malformed
        return given;
    }
    if (place.nnodes == 1) return make_step_secret();
    throw Refused("the ranks of " + std::to_string(place.nnodes) +
                  " nodes must share one secret, and TRELLIS_SECRET is not set (under srun the trellis plugin "
                  "sets it for every step); make one with: " +
                  how_to_make_a_secret + ", for the launch on every node");
}

// This very agent makes the launch's container: the build tree's when run from there.
std::string own_program() {
    std::error_code error;
    auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? config::installed_agent_path() : self.string();
}

// The plan's warnings, and each rank's once per text (the planner gives every task that
// shares CPUs the same one), where the user launching sees them.
void print_warnings(const topology::Plan& plan, int first_rank) {
    for (const auto& warning : plan.warnings) std::fprintf(stderr, "trellis-agent: %s\n", warning.c_str());
    std::vector<std::pair<std::string, std::string>> seen;  // text, ranks
    for (const auto& task : plan.tasks)
        for (const auto& warning : task.warnings) {
            auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == warning; });
            std::string rank = std::to_string(first_rank + task.local_rank);
            if (it == seen.end())
                seen.emplace_back(warning, "rank " + rank);
            else
                it->second =
                    (it->second.starts_with("rank ") ? "ranks " + it->second.substr(5) : it->second) + ", " + rank;
        }
    for (const auto& [warning, ranks] : seen)
        std::fprintf(stderr, "trellis-agent: %s: %s\n", ranks.c_str(), warning.c_str());
}

}  // namespace

int launch_command(const std::vector<std::string>& args) {
    auto options = parse_launch_options(args);
    auto [config, config_source] = agent_config(options.config_path, slurm::slurm_conf_from_environment());
    auto place = find_node_place(options);

    StepRequest request;
    request.node_name = node_name();
    request.tasks = options.nproc_per_node;
    request.policy = options.bind;
    // Inside a Slurm step the agent takes the step's GPUs as the plugin does.
    if (const char* step = std::getenv("SLURM_STEP_ID")) {
        request.under_slurm = *step != 0;
        request.step_gpus = std::getenv("SLURM_STEP_GPUS") ? std::getenv("SLURM_STEP_GPUS") : "";
        request.slurm_conf = slurm::slurm_conf_from_environment();
        request.slurm_visible_devices = std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "";
    }
    request.in_container = !options.image.empty();
    request.single_node = place.nnodes == 1;
    auto plan = plan_step(config, request);
    int first_rank = place.node_rank * options.nproc_per_node;
    if (options.verbose) {
        std::vector<int> ranks;
        for (int local = 0; local < options.nproc_per_node; ++local) ranks.push_back(first_rank + local);
        std::fprintf(stderr, "trellis-agent: configuration: %s\n%s", config_source.c_str(),
                     topology::format_plan(plan, ranks).c_str());
    } else {
        print_warnings(plan, first_rank);
    }

    // Made as this user, as the plugin makes a step's: the ranks join it, and it goes when
    // the last of them and this process have.
    std::optional<HeldContainer> container;
    if (!options.image.empty()) {
        if (::getuid() == 0)
            throw PolicyError(
                "launch --image runs the ranks with the caller's own rights, and root's are not given "
                "to a container: run it as the ranks' user (runuser -u USER -- trellis-agent launch ...)");
        // A registry tag is resolved here, by this node alone: launches on several nodes are
        // given the reference `trellis-agent resolve` pinned, so that they run one image.
        options.image = checked_and_pinned(options.image, config.container);
        StepContainerRequest step;
        step.image = options.image;
        step.user_mounts = options.mounts;
        step.devices = plan_device_files(plan);
        step.writable = options.writable;
        for (const auto& gpu : cdi::plan_step_gpus(plan)) step.gpus.push_back(gpu.index);
        if (const char* auth = std::getenv("REGISTRY_AUTH_FILE")) step.auth_file = auth;
        container = HeldContainer::make(prepare_command(own_program(), step, config.path),
                                        Identity{::getuid(), ::getgid()}, prepare_limit(step));
    }

    int world = place.nnodes * options.nproc_per_node;
    std::string secret = secret_for_ranks(place);
    // PyTorch's env:// meets at the rendezvous host, one port above trellis-train's.
    StepLayout layout;
    layout.world_size = world;
    layout.local_size = options.nproc_per_node;
    layout.node_rank = place.node_rank;
    layout.nnodes = place.nnodes;
    layout.master_addr = place.master.substr(0, place.master.rfind(':'));
    layout.port =
        cli::parse_int(place.master.substr(place.master.rfind(':') + 1), "the port of the master", 1, 65534) + 1;
    std::vector<RankSpec> ranks;
    for (int local = 0; local < options.nproc_per_node; ++local) {
        const auto& task = plan.tasks[std::size_t(local)];
        RankSpec spec;
        spec.rank = place.node_rank * options.nproc_per_node + local;
        spec.first_on_node = local == 0;
        auto lookup = [](const char* name) { return std::string(std::getenv(name) ? std::getenv(name) : ""); };
        // Under srun the agent is one task of the plugin's: every rank gets its own binding in
        // place of that task's.
        auto binding = exported_env(plan, task, config.binding);
        if (!options.image.empty()) binding[env::image.name] = options.image;
        auto task_env = task_environment(binding, lookup);
        spec.env = task_env.set;
        spec.unset = task_env.unset;
        layout.rank = spec.rank;
        layout.local_rank = local;
        if (config.wireup.frameworks)
            for (const auto& [name, value] : wireup_env(WireupChoice{}, layout))
                if (name == env::wireup_set.name || !set_by_user(name, lookup)) spec.env[name] = value;
        spec.env[env::rank.name] = std::to_string(spec.rank);
        spec.env[env::world_size.name] = std::to_string(world);
        spec.env[env::local_rank.name] = std::to_string(local);
        spec.env[env::local_size.name] = std::to_string(options.nproc_per_node);
        spec.env[env::node_rank.name] = std::to_string(place.node_rank);
        spec.env[env::nnodes.name] = std::to_string(place.nnodes);
        spec.env[env::master.name] = place.master;
        spec.env[env::secret.name] = secret;
        if (plan.bind_cpus && !task.cpus.empty()) spec.cpus = task.cpus;
        if (plan.bind_cpus) spec.memory = {config.binding.memory, task.numa};
        ranks.push_back(std::move(spec));
    }
    std::fprintf(stderr, "trellis-agent: node %d of %d (%s): ranks %d-%d of %d, rendezvous %s%s\n", place.node_rank,
                 place.nnodes, place.source.c_str(), ranks.front().rank, ranks.back().rank, world, place.master.c_str(),
                 container ? (", in " + options.image).c_str() : "");
    std::fflush(stderr);
    std::vector<std::string> destinations;
    for (const auto& mount : parse_mounts(options.mounts)) destinations.push_back(mount.destination);
    RankLauncher launcher(options.command, options.grace_seconds, container ? &*container : nullptr, options.image,
                          SettingsChoices{options.keep_env, options.entrypoint}, destinations);
    return launcher.run(ranks);
}

}  // namespace trellis::agent
