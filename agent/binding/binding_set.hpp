// SPDX-License-Identifier: Apache-2.0
// Which of a task's variables are its binding, as trellis set them, and which are the user's.
// The plugin writes some names that it also reads as options (TRELLIS_HCA is both the task's
// own HCAs and --trellis-hca; TRELLIS_IMAGE both the task's image and --trellis-image), and a
// step started inside a task (an srun from `srun --pty bash`, trellis-agent launch under srun)
// inherits them all. TRELLIS_BINDING_SET lists the names trellis set for the task, as
// TRELLIS_WIREUP_SET does for the frameworks' variables: an inner step takes none of them as
// the user's choice, and replaces every one of them with its own plan's.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace trellis::agent {

// The enclosing environment: a variable's value, "" when unset.
using EnvLookup = std::function<std::string(const char*)>;

// Whether NAME is an item of the comma-separated LIST.
bool listed(const std::string& list, const std::string& name);

// Whether NAME in the enclosing environment is a value trellis set for the enclosing task
// (listed in its TRELLIS_BINDING_SET), not a choice of the user's.
bool set_for_enclosing_task(const std::string& name, const EnvLookup& enclosing);

// A task's binding variables, and TRELLIS_BINDING_SET naming them (`set`); the enclosing task's
// binding variables that this plan does not set (`unset`). GPU visibility is the exception:
// Slurm sets or clears CUDA_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES for every step itself,
// so what the enclosing environment holds there is Slurm's for this step, and stays (with the
// CUDA_DEVICE_ORDER its numbers assume).
struct TaskEnvironment {
    std::map<std::string, std::string> set;
    std::vector<std::string> unset;
};
TaskEnvironment task_environment(std::map<std::string, std::string> binding, const EnvLookup& enclosing);

}  // namespace trellis::agent
