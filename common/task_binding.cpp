// SPDX-License-Identifier: Apache-2.0
#include "common/task_binding.hpp"

#include <sched.h>

#include <cstring>

#include "common/environment.hpp"
#include "common/host.hpp"

namespace trellis {

namespace {

bool recorded(const env::Variable& variable) {
    if (&variable == &env::master || &variable == &env::rendezvous_port) return false;
    // Whoever reads a run's records must not become able to pass for one of its ranks.
    if (&variable == &env::secret || &variable == &env::slurm_secret) return false;
    if (std::strncmp(variable.name, "TRELLIS_", 8) == 0) return true;
    for (const auto* library : {&env::cuda_visible_devices, &env::nccl_ib_hca, &env::nccl_socket_ifname,
                                &env::ucx_net_devices, &env::omp_num_threads})
        if (&variable == library) return true;
    return false;
}

}  // namespace

std::map<std::string, std::string> task_binding() {
    std::map<std::string, std::string> binding;
    for (const auto* variable : env::all())
        if (const char* value = env_value(variable->name); value && recorded(*variable))
            binding[variable->name] = value;
    binding["cpus"] = affinity_list();
    return binding;
}

// topology::CpuSet prints the same syntax, but the trainer may not link the topology library
// (scripts/check-layers): the mask is a few lines to print.
std::string affinity_list() {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return "";
    std::string list;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &mask)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &mask)) ++last;
        list += (list.empty() ? "" : ",") + std::to_string(cpu) + (last > cpu ? "-" + std::to_string(last) : "");
        cpu = last;
    }
    return list;
}

}  // namespace trellis
