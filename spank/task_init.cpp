// Per task: memory policy as root (task_init_privileged), then CPU affinity and environment
// as the user (task_init), both in the task's own process just before it execs.
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "spank/contexts.hpp"
#include "spank/state.hpp"
#include "topology/report.hpp"

namespace trellis::spank {
namespace {

constexpr int mpol_bind = 2;  // MPOL_BIND of <linux/mempolicy.h>

const topology::TaskBinding* binding_of(spank_t sp) {
    const PluginState& s = state();
    int task_id = -1;
    if (!s.plan || spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS || task_id < 0 ||
        task_id >= static_cast<int>(s.plan->tasks.size()))
        return nullptr;
    return &s.plan->tasks[task_id];
}

bool exported(const std::string& name) {
    const PluginState& s = state();
    if (name.rfind("TRELLIS_", 0) == 0) return true;
    bool gpu_visibility = name == "CUDA_VISIBLE_DEVICES" || name == "ROCR_VISIBLE_DEVICES" ||
                          name == "CUDA_DEVICE_ORDER";
    if (gpu_visibility && s.user_gpu_bind) return false;
    // CUDA_DEVICE_ORDER travels with CUDA_VISIBLE_DEVICES: the numbers assume PCI order.
    std::string key = name == "CUDA_DEVICE_ORDER" ? "CUDA_VISIBLE_DEVICES" : name;
    const auto& list = s.config.binding.exported;
    return std::find(list.begin(), list.end(), key) != list.end();
}

void set_env(spank_t sp, const std::string& name, const std::string& value) {
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS)
        log_error("cannot set " + name + " in the task's environment");
}

}  // namespace

int bind_task_memory(spank_t sp) {
    const topology::TaskBinding* task = binding_of(sp);
    if (!task || !state().plan->bind_cpus || task->numa.empty()) return 0;
    unsigned long mask[16] = {};
    for (int numa : task->numa)
        if (numa >= 0 && numa < static_cast<int>(sizeof mask * 8))
            mask[numa / (8 * sizeof(long))] |= 1UL << (numa % (8 * sizeof(long)));
    if (syscall(SYS_set_mempolicy, mpol_bind, mask, sizeof mask * 8 + 1) != 0)
        log_error("task " + std::to_string(task->local_rank) + ": cannot bind memory to NUMA " +
                  std::to_string(task->numa.front()) + ": " + std::strerror(errno) +
                  " (the task runs with the default memory policy)");
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
        cpu_set_t mask;
        CPU_ZERO(&mask);
        for (int cpu : task->cpus)
            if (cpu < CPU_SETSIZE) CPU_SET(cpu, &mask);
        if (sched_setaffinity(0, sizeof mask, &mask) != 0) {
            log_error("task " + std::to_string(task->local_rank) + ": cannot bind to CPUs " +
                      task->cpus.to_string() + ": " + std::strerror(errno));
            return -1;
        }
    }
    for (const auto& [name, value] : task->env)
        if (exported(name)) set_env(sp, name, value);
    set_env(sp, "TRELLIS_LOCAL_RANK", std::to_string(task->local_rank));
    set_env(sp, "TRELLIS_LOCAL_SIZE", std::to_string(s.plan->tasks.size()));

    if (s.choices.verbose && task->local_rank == 0) {
        std::string table = topology::format_plan(*s.plan);
        std::fputs(table.c_str(), stderr);
        std::fflush(stderr);
    }
    return 0;
}

}  // namespace trellis::spank
