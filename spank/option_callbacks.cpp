// SPDX-License-Identifier: Apache-2.0
// The --trellis-* options and their environment variables.
// srun and sbatch validate them before anything is launched; slurmstepd parses them again.
#include <cstdlib>
#include <fstream>
#include <vector>
#include <stdexcept>

#include "agent/binding/binding_set.hpp"
#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"
#include "slurm/gpu_binding.hpp"

namespace trellis::spank {
namespace {

// Each option: its parser and the environment variable standing in for it.
struct OptionKind {
    const char* flag;
    const char* env;
    void (*parse)(const std::string&, UserChoices&);
    bool PluginState::*given;
};

const OptionKind bind_kind{"--trellis-bind", env::bind.name, parse_bind_option, &PluginState::bind_given};
const OptionKind hca_kind{"--trellis-hca", env::hca.name, parse_hca_option, &PluginState::hca_given};
const OptionKind gpus_kind{"--trellis-gpus", env::gpus.name, parse_gpus_option, &PluginState::gpus_given};
const OptionKind memory_kind{"--trellis-memory", env::memory.name, parse_memory_option, &PluginState::memory_given};
const OptionKind wireup_kind{"--trellis-wireup", env::wireup.name, parse_wireup_option, &PluginState::wireup_given};
const OptionKind verbose_kind{"--trellis-verbose", env::verbose.name, parse_verbose_value, &PluginState::verbose_given};
const OptionKind image_kind{"--trellis-image", env::image.name, parse_image_option, &PluginState::image_given};
const OptionKind mounts_kind{"--trellis-mounts", env::mounts.name, parse_mounts_option, &PluginState::mounts_given};
const OptionKind writable_kind{"--trellis-writable", env::writable.name, parse_writable_value,
                               &PluginState::writable_given};
const OptionKind env_kind{"--trellis-env", env::keep_env.name, parse_env_option, &PluginState::env_given};
const OptionKind entrypoint_kind{"--trellis-entrypoint", env::entrypoint.name, parse_entrypoint_value,
                                 &PluginState::entrypoint_given};

// This process's TRELLIS_BINDING_SET without NAME.
void forget_binding_name(const char* name) {
    const char* set = std::getenv(env::binding_set.name);
    if (!set || !agent::listed(set, name)) return;
    std::string rest;
    for (const auto& item : cli::split(set))
        if (item != name) rest += (rest.empty() ? "" : ",") + item;
    setenv(env::binding_set.name, rest.c_str(), 1);
}

int take_value(const OptionKind& kind, const std::string& value, bool from_env) {
    try {
        kind.parse(value, state().choices);
    } catch (const UsageError& e) {
        std::string source = from_env ? std::string(kind.env) + "=" + value : kind.flag;
        std::string message = std::string(from_env ? "environment " : "option ") + source + ": " + e.what();
        if (spank_context() == S_CTX_REMOTE) {
            state().held_error = message;  // shown from task_init
            // An image asked for and refused: its tasks must not run on the host instead.
            if (&kind == &image_kind || &kind == &mounts_kind || &kind == &writable_kind || &kind == &env_kind ||
                &kind == &entrypoint_kind)
                state().container_error = message;
            return 0;
        }
        log_error(message);
        return -1;
    }
    if (!from_env) state().*kind.given = true;
    // sbatch: hand the choice to the batch script's environment, where srun finds it, as the
    // user's (an sbatch from inside a task inherits that task's TRELLIS_BINDING_SET).
    if (spank_context() == S_CTX_ALLOCATOR) {
        setenv(kind.env, value.c_str(), 1);
        forget_binding_name(kind.env);
    }
    return 0;
}

// Slurm calls the option callbacks directly: nothing may escape them into its C code.
int take(const OptionKind& kind, const std::string& value, bool from_env) noexcept {
    try {
        return take_value(kind, value, from_env);
    } catch (const std::exception& e) {
        log_error(std::string(kind.flag) + ": " + e.what());
    } catch (...) {
        log_error(std::string(kind.flag) + ": unexpected failure");
    }
    return -1;
}

int on_bind(int, const char* arg, int) { return take(bind_kind, arg ? arg : "", false); }
int on_hca(int, const char* arg, int) { return take(hca_kind, arg ? arg : "", false); }
int on_gpus(int, const char* arg, int) { return take(gpus_kind, arg ? arg : "", false); }
int on_memory(int, const char* arg, int) { return take(memory_kind, arg ? arg : "", false); }
int on_wireup(int, const char* arg, int) { return take(wireup_kind, arg ? arg : "", false); }
int on_verbose(int, const char*, int) { return take(verbose_kind, "1", false); }
int on_image(int, const char* arg, int) { return take(image_kind, arg ? arg : "", false); }
int on_mounts(int, const char* arg, int) { return take(mounts_kind, arg ? arg : "", false); }
int on_writable(int, const char*, int) { return take(writable_kind, "1", false); }
int on_env(int, const char* arg, int) { return take(env_kind, arg ? arg : "", false); }
int on_entrypoint(int, const char*, int) { return take(entrypoint_kind, "1", false); }

spank_option options[] = {
    {const_cast<char*>("trellis-bind"), const_cast<char*>("closest|none[,verbose]"),
     const_cast<char*>("trellis: bind each task to its nearest GPU, HCA, CPUs and memory (closest) or not "
                       "at all (none); default: the cluster's configured policy; verbose prints the plan"),
     1, 0, on_bind},
    {const_cast<char*>("trellis-hca"), const_cast<char*>("auto|NAME[:PORT],..."),
     const_cast<char*>("trellis: HCAs to choose from (default auto: all with an ACTIVE port)"), 1, 0, on_hca},
    {const_cast<char*>("trellis-gpus"), const_cast<char*>("own|step"),
     const_cast<char*>("trellis: each task sees its own GPUs (own, the default) or all of the step's GPUs on its "
                       "node, its own first (step: CUDA IPC and peer access between tasks)"),
     1, 0, on_gpus},
    {const_cast<char*>("trellis-memory"), const_cast<char*>("bind|preferred|none"),
     const_cast<char*>("trellis: memory policy on the task's NUMA node (default preferred: local first, then "
                       "elsewhere; bind: only there)"),
     1, 0, on_memory},
    {const_cast<char*>("trellis-wireup"), const_cast<char*>("torch|none|tf[:chief][:ps=N],..."),
     const_cast<char*>("trellis: variables for the job's own framework (default torch: MASTER_ADDR, RANK, "
                       "WORLD_SIZE... for env://; tf adds TF_CONFIG)"),
     1, 0, on_wireup},
    {const_cast<char*>("trellis-verbose"), nullptr,
     const_cast<char*>("trellis: print each node's binding table on stderr"), 0, 0, on_verbose},
    {const_cast<char*>("trellis-image"), const_cast<char*>("IMAGE"),
     const_cast<char*>("trellis: run the tasks in this container image: docker://[HOST[:PORT]/]REPO[:TAG|@sha256:D], "
                       "oci-archive:PATH, docker-archive:PATH, or an OCI bundle folder, a .sif or a .sqsh file"),
     1, 0, on_image},
    {const_cast<char*>("trellis-mounts"), const_cast<char*>("SRC:DST[:ro],..."),
     const_cast<char*>("trellis: bind-mount these host paths into the container"), 1, 0, on_mounts},
    {const_cast<char*>("trellis-writable"), nullptr,
     const_cast<char*>("trellis: give the image's root a throw-away writable layer"), 0, 0, on_writable},
    {const_cast<char*>("trellis-env"), const_cast<char*>("NAME,..."),
     const_cast<char*>("trellis: these variables keep the job's value over the image's Env"), 1, 0, on_env},
    {const_cast<char*>("trellis-entrypoint"), nullptr,
     const_cast<char*>("trellis: run the image's Entrypoint with the command as its arguments"), 0, 0, on_entrypoint},
};

// The variable from srun's or sbatch's own environment, or from the job's in slurmstepd.
bool read_env(spank_t sp, const char* name, std::string& value) {
    if (spank_context() == S_CTX_REMOTE) {
        char buf[4096];
        if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return false;
        value = buf;
        return true;
    }
    const char* env = std::getenv(name);
    if (!env) return false;
    value = env;
    return true;
}

// srun's own --cpu-bind (or SLURM_CPU_BIND) wins over trellis. slurmstepd cannot tell a
// user's choice from a default that task/affinity filled in, so srun, which can, hands it on
// in the job's environment. So it does with Slurm's own GPU binding, which srun alone can read
// in every Slurm version (slurm/gpu_binding.hpp: --gpu-bind, --tres-bind, a GPU count per task,
// and --gres-flags=allow-task-sharing, which reaches no variable of the step).
void hand_on_slurm_binding() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    slurm::SrunInput srun;
    for (std::string arg; std::getline(in, arg, '\0');) srun.args.push_back(arg);
    srun.env = [](const char* name) {
        const char* value = std::getenv(name);
        return std::string(value ? value : "");
    };
    std::string cpu_bind = srun.given("--cpu-bind", "SLURM_CPU_BIND");
    slurm::SrunGpuBinding gpus = slurm::srun_gpu_binding(srun, SLURM_VERSION_NUMBER);
    // Set or cleared: an srun inside a step must not inherit the outer srun's choices.
    for (const auto& [name, value] : {std::pair{env::slurm_cpu_bind.name, cpu_bind},
                                      {env::slurm_gpu_bind.name, gpus.bind},
                                      {env::slurm_gpu_sharing.name, std::string(gpus.task_sharing ? "1" : "")}})
        value.empty() ? unsetenv(name) : setenv(name, value.c_str(), 1);
}

}  // namespace

int register_options(spank_t sp) {
    for (auto& option : options)
        if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
            log_error(std::string("cannot register option --") + option.name);
            return -1;
        }
    return 0;
}

int take_environment_defaults(spank_t sp) {
    if (spank_context() == S_CTX_LOCAL) hand_on_slurm_binding();
    // Inside a task, the names trellis set for it (TRELLIS_HCA, the task's own HCAs;
    // TRELLIS_IMAGE) are its binding, not the user's options: the step plans afresh.
    agent::EnvLookup enclosing = [sp](const char* name) {
        std::string value;
        return read_env(sp, name, value) ? value : std::string();
    };
    for (const OptionKind* kind : {&bind_kind, &hca_kind, &gpus_kind, &memory_kind, &wireup_kind, &verbose_kind,
                                   &image_kind, &mounts_kind, &writable_kind, &env_kind, &entrypoint_kind}) {
        std::string value;
        if (state().*kind->given || !read_env(sp, kind->env, value)) continue;
        if (agent::set_for_enclosing_task(kind->env, enclosing)) continue;
        if (take(*kind, value, true) != 0) return -1;
    }
    // srun, with the configuration loaded: a refused image or mount stops it here, before
    // anything is launched, with the reason on the user's terminal.
    if (spank_context() == S_CTX_LOCAL) return check_container_request();
    if (spank_context() == S_CTX_REMOTE) {
        take_pinned_image(sp);
        make_image_cache_folder(sp);
    }
    return 0;
}

}  // namespace trellis::spank
