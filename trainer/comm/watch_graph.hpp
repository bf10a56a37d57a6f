// SPDX-License-Identifier: Apache-2.0
// Which ranks link to each other from the start, to watch each other: the ring neighbours and
// the partners that differ in one bit (the hypercube, which holds the binomial tree). A dead or
// frozen rank is seen by its watchers, and the news crosses the job in about log2 n hops of
// this graph; no rank loses touch with the others when one rank fails (the ring alone joins
// them). These are also the peers of the ring, halving-doubling, the broadcast and the
// barrier, so that a job of those schedules makes no other link.
#pragma once

#include <vector>

namespace trellis::comm {

// In increasing rank order, without `rank` itself.
std::vector<int> watch_peers(int rank, int size);

}  // namespace trellis::comm
