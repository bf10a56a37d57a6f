// SPDX-License-Identifier: Apache-2.0
// What a report compares runs by, beyond the header's facts: where rank 0 ran and how it was
// bound, how the ranks sat on the nodes, the per-rank batch and the precision; and what the
// process used (its peak resident memory), for the last records of metrics.jsonl.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/comm/transport.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

struct Placement {
    const TrainOptions& options;
    std::string host;                            // rank 0's node, as the wireup names it
    const comm::Transport* transport = nullptr;  // null: a single process
    bool on_gpu = false;                         // the CPU computes in fp32 whatever --precision says
};

// Adds binding, hostname, nodes, ranks_per_node, batch_size, precision and ps_servers to the
// run record (the gradient path adds transport, algorithm and gradient_bytes).
void describe_placement(const Placement& placement, nlohmann::json& run);

// The most memory this process has held resident so far (getrusage's ru_maxrss), in bytes.
std::int64_t peak_rss_bytes();

}  // namespace trellis::train
