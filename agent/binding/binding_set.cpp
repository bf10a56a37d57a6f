// SPDX-License-Identifier: Apache-2.0
#include "agent/binding/binding_set.hpp"

#include "common/cli.hpp"
#include "common/environment.hpp"

namespace trellis::agent {

bool listed(const std::string& list, const std::string& name) {
    return !name.empty() && ("," + list + ",").find("," + name + ",") != std::string::npos;
}

bool set_for_enclosing_task(const std::string& name, const EnvLookup& enclosing) {
    return listed(enclosing(env::binding_set.name), name);
}

TaskEnvironment task_environment(std::map<std::string, std::string> binding, const EnvLookup& enclosing) {
    TaskEnvironment result;
    std::string names;
    for (const auto& [name, value] : binding) names += (names.empty() ? "" : ",") + name;
    std::string enclosing_set = enclosing(env::binding_set.name);
    if (!enclosing_set.empty()) {
        bool cuda_visible_stays = !enclosing(env::cuda_visible_devices.name).empty();
        for (const auto& name : cli::split(enclosing_set)) {
            if (name.empty() || binding.count(name) || name == env::binding_set.name) continue;
            if (name == env::cuda_visible_devices.name || name == env::rocr_visible_devices.name) continue;
            if (name == env::cuda_device_order.name && cuda_visible_stays) continue;
            result.unset.push_back(name);
        }
    }
    result.set = std::move(binding);
    if (!names.empty())
        result.set[env::binding_set.name] = names;
    else if (!enclosing_set.empty())
        result.unset.push_back(env::binding_set.name);  // nothing here is trellis's now
    return result;
}

}  // namespace trellis::agent
