// SPDX-License-Identifier: Apache-2.0
// What one step's gradient communication cost, whichever path carried it (host allreduce,
// NCCL, parameter server).
#pragma once

#include <cstddef>

namespace trellis::comm {

struct CommStats {
    double seconds = 0;       // time spent communicating this step
    double wait_seconds = 0;  // time the step waited for it after the backward pass
    std::size_t bytes = 0;
    double bus_bandwidth(int ranks) const {  // GB/s, as nccl-tests defines it
        return seconds > 0 ? double(bytes) * 2.0 * (ranks - 1) / ranks / seconds / 1e9 : 0;
    }
};

}  // namespace trellis::comm
