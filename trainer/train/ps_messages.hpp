// The parameter server's messages. A push (worker to server) is the server's shard of the
// gradients followed by a trailer; a pull (server to worker) is the shard of the updated
// parameters followed by a trailer. Sizes are known to both sides, so no framing is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace trellis::train::ps {

constexpr std::size_t trailer_floats = 5;

// Push trailer.
constexpr std::size_t push_lr = 0;     // the worker's learning rate for this step
constexpr std::size_t push_loss = 1;   // its loss
constexpr std::size_t push_stop = 2;   // 1 when it was asked to stop (a signal)
constexpr std::size_t push_last = 3;   // 1 on its last push
constexpr std::size_t push_checkpoint = 4;  // 1 when rank 0 saves a checkpoint after this step

// Pull trailer.
constexpr std::size_t pull_stop = 0;   // 1 when any worker asked to stop: finish this step
constexpr std::size_t pull_loss = 1;   // synchronous: the mean loss of all workers

// The step count travels from rank 0 to every rank, servers included, after the initial
// weights: as the two halves of its bits, since a float holds no 64-bit integer.
inline void split_step(std::int64_t step, float halves[2]) { std::memcpy(halves, &step, sizeof step); }
inline std::int64_t joined_step(const float halves[2]) {
    std::int64_t step = 0;
    std::memcpy(&step, halves, sizeof step);
    return step;
}

}  // namespace trellis::train::ps
