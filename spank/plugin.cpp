// SPDX-License-Identifier: Apache-2.0
// spank_trellis.so: the SPANK entry points, dispatching to one file per concern.
// Nothing here may throw into Slurm: each entry point catches everything and logs one line.
#include <exception>
#include <string>
#include <vector>

#include "config.h"
#include "spank/contexts.hpp"
#include "spank/state.hpp"

using namespace trellis::spank;

extern "C" {
extern const char plugin_name[] = "trellis";
extern const char plugin_type[] = "spank";
// slurmstepd refuses plugins built for another Slurm release.
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

template <typename F>
int guarded(const char* where, F&& body) {
    try {
        if (trellis::spank::state().disabled) return 0;
        return body();
    } catch (const std::exception& e) {
        log_error(std::string(where) + ": " + e.what());
    } catch (...) {
        log_error(std::string(where) + ": unexpected failure");
    }
    return -1;
}

std::vector<std::string> arguments(int ac, char** av) { return std::vector<std::string>(av, av + ac); }

}  // namespace

namespace trellis::spank {

PluginState& state() {
    static PluginState s;
    return s;
}

namespace {

// One line each: a value a user chose (an image path with a newline) must not forge lines in
// slurmd's log.
std::string one_line(std::string message) {
    for (char& c : message)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return message;
}

}  // namespace

void log_error(const std::string& message) { slurm_error("trellis: %s", one_line(message).c_str()); }
void log_info(const std::string& message) { slurm_info("trellis: %s", one_line(message).c_str()); }

}  // namespace trellis::spank

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    return guarded("init", [&] {
        spank_context_t context = spank_context();
        if (context != S_CTX_LOCAL && context != S_CTX_REMOTE && context != S_CTX_ALLOCATOR) return 0;
        // Before the configuration: a step's ranks need their secret whatever the binding does.
        if (context == S_CTX_LOCAL) make_secret_for_step();
        if (register_options(sp) != 0) return -1;
        // srun, sbatch and salloc read the configuration too, so that a broken file stops the
        // job before it is queued or launched, with its message on the user's terminal.
        return load_configuration(arguments(ac, av));
    });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
    return guarded("init_post_opt", [&] { return take_environment_defaults(sp); });
}

extern "C" int slurm_spank_local_user_init(spank_t sp, int, char**) {
    return guarded("local_user_init", [&] { return send_image_to_nodes(sp); });
}

// As root on each node of the job, before its first step when PrologFlags=Alloc. Never a
// failure: a failed prolog drains the node, and the step's own start makes the folder too.
extern "C" int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
    try {
        make_cache_folder_for_job(sp, arguments(ac, av));
    } catch (const std::exception& e) {
        log_error(std::string("job_prolog: ") + e.what());
    } catch (...) {}
    return 0;
}

extern "C" int slurm_spank_user_init(spank_t sp, int, char**) {
    try {
        give_secret_to_tasks(sp);
    } catch (const std::exception& e) {
        log_error(std::string("user_init: the step's secret: ") + e.what());
    }
    return guarded("user_init", [&] {
        int planned = plan_node(sp);
        prepare_container(sp);
        return planned;
    });
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
    return guarded("task_init_privileged", [&] { return bind_task_memory(sp); });
}

extern "C" int slurm_spank_exit(spank_t, int, char**) {
    return guarded("exit", [] {
        if (spank_context() == S_CTX_REMOTE) let_go_of_container();
        return 0;
    });
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
    if (trellis::spank::state().disabled) {
        // Disabled (optional in plugstack.conf, configuration unreadable): a task that asked
        // for an image must still not run on the host instead.
        try {
            refuse_unhonoured_image(sp);
        } catch (...) {}
        return 0;
    }
    return guarded("task_init", [&] {
        enter_container(sp);
        if (bind_task(sp) != 0) return -1;
        if (set_container_environment(sp) != 0) return -1;
        return apply_image_environment(sp);
    });
}
