// A barrier over any transport: returns on each rank once every rank has entered it. For
// benchmarks, so that a timed collective starts with every rank present (as MPI_Barrier
// before MPI_Allreduce in the peers they are compared with) and a rank's timing does not
// include the others' preparation.
#pragma once

#include "trainer/comm/transport.hpp"

namespace trellis::comm {

// The dissemination barrier: in round k each rank signals the rank 2^k ahead and waits for
// the one 2^k behind; after ceil(log2 n) rounds every rank has heard, directly or not, from
// all the others.
void barrier(Transport& transport);

}  // namespace trellis::comm
