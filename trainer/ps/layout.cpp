// SPDX-License-Identifier: Apache-2.0
#include "trainer/ps/layout.hpp"

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace trellis::ps {

Layout::Layout(const nn::ParameterStore& store, int world_size, int servers) : world_size_(world_size) {
    if (servers < 1 || servers >= world_size)
        throw UsageError("--ps-servers " + std::to_string(servers) + " needs between 1 and " +
                         std::to_string(world_size - 1) + " servers for " + std::to_string(world_size) +
                         " ranks (at least one rank must be a worker)");
    const auto& learned = store.learned();
    if (std::size_t(servers) > learned.size())
        throw UsageError("--ps-servers " + std::to_string(servers) + " is more than the model's " +
                         std::to_string(learned.size()) + " parameters");
    const double total = double(store.learned_elements());
    std::size_t parameter = 0, offset = 0;
    for (int s = 0; s < servers; ++s) {
        Shard shard{parameter, parameter, offset, offset};
        // Fill up to this server's share of the bytes, leaving one parameter for each server
        // still to come.
        double target = total * double(s + 1) / servers;
        while (shard.end_parameter < learned.size() - std::size_t(servers - 1 - s) &&
               (shard.end_parameter == shard.first_parameter || s == servers - 1 ||
                double(shard.end) + double(learned[shard.end_parameter]->elements()) / 2 <= target)) {
            shard.end += std::size_t(learned[shard.end_parameter]->elements());
            ++shard.end_parameter;
        }
        parameter = shard.end_parameter;
        offset = shard.end;
        shards_.push_back(shard);
    }
}

}  // namespace trellis::ps
