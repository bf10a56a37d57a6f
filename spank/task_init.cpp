// SPDX-License-Identifier: Apache-2.0
// Per task: memory policy as root (task_init_privileged), then CPU affinity and environment
// as the user (task_init), both in the task's own process just before it execs. The plan and
// how to apply it are the shared core's (agent/binding/step_plan.hpp).
#include <cstdio>
#include <vector>

#include "agent/binding/binding_set.hpp"
#include "agent/binding/step_plan.hpp"
#include "common/environment.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"
#include "topology/report.hpp"

namespace trellis::spank {
namespace {

const topology::TaskBinding* binding_of(spank_t sp) {
    const PluginState& s = state();
    int task_id = -1;
    if (!s.plan || spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS || task_id < 0 ||
        task_id >= static_cast<int>(s.plan->tasks.size()))
        return nullptr;
    return &s.plan->tasks[task_id];
}

void set_env(spank_t sp, const std::string& name, const std::string& value) {
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS)
        log_error("cannot set " + name + " in the task's environment");
}

// The frameworks' variables; any the user set in the job's environment stays as it is.
void set_wireup(spank_t sp, const topology::TaskBinding& task) {
    PluginState& s = state();
    if (!s.layout) return;
    agent::StepLayout layout = *s.layout;
    uint32_t rank = 0;
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS) return;
    layout.rank = static_cast<int>(rank);
    layout.local_rank = task.local_rank;
    auto lookup = [&](const char* name) { return job_env(sp, name); };
    for (const auto& [name, value] : agent::wireup_env(s.wireup, layout))
        if (name == env::wireup_set.name || !agent::set_by_user(name, lookup)) set_env(sp, name, value);
}

}  // namespace

int bind_task_memory(spank_t sp) {
    const topology::TaskBinding* task = binding_of(sp);
    const PluginState& s = state();
    if (!task || !s.plan->bind_cpus) return 0;
    try {
        agent::apply_memory_policy(s.choices.memory.value_or(s.config.binding.memory), task->numa);
    } catch (const std::exception& e) {
        log_error("task " + std::to_string(task->local_rank) + ": " + e.what() +
                  " (the task runs with the default memory policy)");
    }
    return 0;
}

int bind_task(spank_t sp) {
    PluginState& s = state();
    if (!s.held_error.empty()) {
        log_error(s.held_error);
        return -1;
    }
    const topology::TaskBinding* task = binding_of(sp);
    if (!task) return 0;

    if (s.plan->bind_cpus && !task->cpus.empty()) {
        try {
            agent::apply_cpu_affinity(task->cpus);
        } catch (const std::exception& e) {
            log_error("task " + std::to_string(task->local_rank) + ": " + e.what());
            return -1;
        }
    }
    // Every binding variable of an enclosing task (this step started inside one) is replaced.
    auto binding = agent::exported_env(*s.plan, *task, s.config.binding, s.user_gpu_bind);
    if (!s.choices.image.empty()) binding[env::image.name] = s.choices.image;
    auto task_env = agent::task_environment(binding, [sp](const char* name) { return job_env(sp, name); });
    for (const auto& [name, value] : task_env.set) set_env(sp, name, value);
    for (const auto& name : task_env.unset) spank_unsetenv(sp, name.c_str());
    set_env(sp, env::local_rank.name, std::to_string(task->local_rank));
    set_env(sp, env::local_size.name, std::to_string(s.plan->tasks.size()));
    set_wireup(sp, *task);

    // Once per node: what the user should know even without asking for the report.
    if (!s.choices.verbose && task->local_rank == 0)
        for (const auto& warning : s.plan->urgent_warnings) {
            std::string line = "trellis: " + s.plan->host + ": warning: " + warning + "\n";
            std::fputs(line.c_str(), stderr);
        }
    if (s.choices.verbose && task->local_rank == 0) {
        std::vector<int> ranks;
        for (uint32_t local = 0; local < s.plan->tasks.size(); ++local) {
            uint32_t global = 0;
            if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, local, &global) != ESPANK_SUCCESS) break;
            ranks.push_back(static_cast<int>(global));
        }
        std::string table = topology::format_plan(*s.plan, ranks);
        if (!s.choices.image.empty())
            table += "container: the tasks run in " + s.choices.image +
                     (s.image_as_asked.empty() ? "" : " (" + s.image_as_asked + ", resolved by srun)") + "\n";
        std::fputs(table.c_str(), stderr);
        std::fflush(stderr);
    }
    return 0;
}

}  // namespace trellis::spank
