// SPDX-License-Identifier: Apache-2.0
// What every rank takes from rank 0 at the start of a run.
//
// Where a run starts, decided by rank 0 and broadcast to every rank (parameter servers
// included), so that ranks that see different checkpoint folders (a node-local disk, a stale
// NFS listing) still start at the same step, data position and fp16 loss scale.
#pragma once

#include <cstdint>

#include "trainer/comm/broadcast.hpp"
#include "trainer/data/batch.hpp"

namespace trellis::train {

// Rank 0's dataset, shared before anything else: parameter servers build their model from its
// number of classes (they open no dataset), and a worker whose dataset differs is refused.
struct DatasetShape {
    std::int64_t classes = 0;
    std::int64_t eval_samples = 0;  // 0: no evaluation set
};

// Every rank calls it first in its start-up; rank 0's `shape` wins.
inline void share_dataset_shape(comm::Transport& transport, DatasetShape& shape) {
    comm::broadcast_value_from_root(transport, shape);
}

struct RunStart {
    std::int64_t step = 0;  // steps completed
    data::Position next;    // the next batch
    float loss_scale = 0;   // fp16's loss scale (0: none saved)
    std::int64_t loss_scale_steps = 0;
    std::int64_t pending_eval = -1;  // the step of an evaluation a signal abandoned: redone first
};

// Every rank calls it at the same point of its start-up; rank 0's `start` wins.
inline void share_run_start(comm::Transport& transport, RunStart& start) {
    comm::broadcast_value_from_root(transport, start);
}

}  // namespace trellis::train
