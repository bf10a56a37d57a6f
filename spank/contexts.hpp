// The SPANK entry points, one concern each: options (option_callbacks.cpp), the node's plan
// (user_init.cpp) and applying it per task (task_init.cpp). plugin.cpp only dispatches.
#pragma once

#include <string>
#include <vector>

#include "spank/spank_api.hpp"

namespace trellis::spank {

int register_options(spank_t sp);
// Reads TRELLIS_BIND/TRELLIS_HCA/TRELLIS_VERBOSE where the options were not given.
int take_environment_defaults(spank_t sp);
int load_configuration(const std::vector<std::string>& args);

int plan_node(spank_t sp);              // user_init
int bind_task_memory(spank_t sp);       // task_init_privileged
int bind_task(spank_t sp);              // task_init

}  // namespace trellis::spank
