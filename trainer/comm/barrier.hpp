// SPDX-License-Identifier: Apache-2.0
// A barrier over any transport: returns on each rank once every rank has entered it. For
// benchmarks, so that a timed collective starts with every rank present (as MPI_Barrier
// before MPI_Allreduce in the peers they are compared with) and a rank's timing does not
// include the others' preparation.
#pragma once

#include "trainer/comm/transport.hpp"

namespace trellis::comm {

// Up the binomial tree (a rank signals its parent once its whole subtree has entered) and down
// again: 2 ceil(log2 n) steps, each rank talking only to the partners of halving-doubling.
void barrier(Transport& transport);

}  // namespace trellis::comm
