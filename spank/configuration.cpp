// SPDX-License-Identifier: Apache-2.0
// Reading trellis.toml and the plugstack.conf arguments, in srun, sbatch, salloc and
// slurmstepd. A broken configuration must neither fake success nor take nodes down:
//  - srun, sbatch and salloc refuse the job with the message, before anything runs (Slurm
//    stops them when the plugin is `required`; an `optional` plugin's refusal is ignored by
//    Slurm, and the plugin then stays out of the job's way);
//  - in slurmstepd a failed init would stop the step from starting, and a batch step's
//    failure drains the node ("batch job complete failure"), so the error is held and fails
//    each task visibly from task_init instead; with `optional` the plugin stands aside.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "spank/contexts.hpp"
#include "spank/state.hpp"
#include "slurm/slurm_config.hpp"

namespace trellis::spank {
namespace {

// Whether plugstack.conf lists this plugin, with these arguments, as optional. slurmd exports
// the slurm.conf it reads as SLURM_CONF; PlugStackConfig there, or plugstack.conf beside it.
bool listed_as_optional(const std::vector<std::string>& args) {
    Dl_info self{};
    if (!dladdr(reinterpret_cast<void*>(&listed_as_optional), &self) || !self.dli_fname) return false;
    std::string name = std::filesystem::path(self.dli_fname).filename();
    for (const auto& line : slurm::read_plugstack(slurm::plugstack_path(slurm::slurm_conf_from_environment())))
        if (std::filesystem::path(line.plugin).filename() == name && line.args == args) return line.optional;
    return false;
}

}  // namespace

int load_configuration(const std::vector<std::string>& args) {
    PluginState& s = state();
    try {
        s.config = load_config(args, TRELLIS_CONFIG_PATH);
        return 0;
    } catch (const ConfigError& e) {
        if (spank_context() != S_CTX_REMOTE) {
            log_error(e.what());
            s.disabled = true;  // reached only when Slurm goes on: the plugin is optional
            return -1;
        }
        if (listed_as_optional(args)) {
            log_error(std::string(e.what()) + " (the plugin is optional in plugstack.conf: the job runs without it)");
            s.disabled = true;
        } else {
            s.held_error = e.what();
        }
        return 0;
    }
}

}  // namespace trellis::spank
