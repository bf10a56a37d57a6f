// SPDX-License-Identifier: Apache-2.0
// The environment a task gets from its binding: what CUDA/ROCm, NCCL, UCX, Open MPI and
// OpenMP read, plus TRELLIS_* variables for scripts and the trainer.
#pragma once

#include <map>
#include <string>

#include "topology/plan.hpp"

namespace trellis::topology {

// The task's own variables, and those that are the same for every task of the plan (NCCL's).
std::map<std::string, std::string> render_environment(const TaskBinding& task, const Plan& plan);

}  // namespace trellis::topology
