// SPDX-License-Identifier: Apache-2.0
// The binding a task was given, as it finds it in its own environment and affinity: what the
// metrics and benchmark logs record beside a run's numbers, so that a report can tell a run
// bound to the far socket from one bound well.
#pragma once

#include <map>
#include <string>

namespace trellis {

// The binding variables that are set: every TRELLIS_* variable of environment.hpp's table
// but the wireup's meeting point (TRELLIS_MASTER, TRELLIS_RENDEZVOUS_PORT: a host and port
// of one run, not a property of its binding), and the variables trellis writes for the
// libraries (CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, NCCL_SOCKET_IFNAME, UCX_NET_DEVICES,
// OMP_NUM_THREADS); plus "cpus", the CPUs this process may run on (affinity_list()).
std::map<std::string, std::string> task_binding();

// The CPUs of this process's affinity mask in the "0-3,8" list syntax of Linux and Slurm;
// "" when the mask cannot be read.
std::string affinity_list();

}  // namespace trellis
