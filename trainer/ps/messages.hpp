// SPDX-License-Identifier: Apache-2.0
// The parameter server's messages, after ps-lite's split of control from data. A push (worker
// to server) is the server's slice of the gradients in the run's wire format (--compress:
// f32, or bf16/fp16 for half the bytes), then a PushHeader; a pull (server to worker) is the
// slice of the updated parameters, always f32 (they are the model), then a PullHeader. Each part is its own
// transfer, in order on one connection; sizes are known to both sides, so nothing is framed.
// Both ends run the same program, so the headers travel as their bytes.
#pragma once

#include <cstdint>
#include <type_traits>

namespace trellis::ps {

struct PushHeader {
    float lr = 0;                 // the worker's learning rate for this step
    float loss = 0;               // its loss
    std::uint8_t stop = 0;        // it was asked to stop (a signal)
    std::uint8_t last = 0;        // its last push
    std::uint8_t checkpoint = 0;  // rank 0 saves a checkpoint after this step
};

struct PullHeader {
    float mean_loss = 0;    // synchronous: the mean loss of all workers; async: the pusher's
    std::uint8_t stop = 0;  // a worker asked to stop: finish this step
};

static_assert(std::is_trivially_copyable_v<PushHeader> && std::is_trivially_copyable_v<PullHeader>);

}  // namespace trellis::ps
