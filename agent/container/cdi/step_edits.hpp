// SPDX-License-Identifier: Apache-2.0
// The one call a step's container makes for its GPUs: the CDI edits of the step's GPUs on
// this node, from the specs in [container] cdi_dirs. Made by the job's user, on the node,
// before the container's root becomes read-only (apply_edits with the root's RootEditor);
// `env` goes after the image's environment.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/container/cdi/resolved_edits.hpp"
#include "agent/container/cdi/selection.hpp"
#include "config/config.hpp"
#include "topology/plan.hpp"

namespace trellis::agent::cdi {

struct StepCdi {
    std::optional<ResolvedEdits> edits;  // none: the step has no GPU here, or no spec is installed
    // For the step's stderr: that no driver library was injected (a GPU step without a spec),
    // and the verbose report's notes (skipped hooks, replaced devices).
    std::optional<std::string> warning;
    std::vector<std::string> notes;
};

// The NVIDIA GPUs of a plan (every task's visible GPUs, once each) as CDI names them: by
// their index among the node's NVIDIA GPUs in PCI order (NVML's, and nvidia-ctk's names).
std::vector<StepGpu> plan_step_gpus(const topology::Plan& plan);

// Throws what load_specs, step_gpu_devices and resolve_edits throw: the step then fails, it
// never runs without what the spec asks.
StepCdi step_cdi_edits(const config::ContainerConfig& config, const std::vector<StepGpu>& gpus);

}  // namespace trellis::agent::cdi
