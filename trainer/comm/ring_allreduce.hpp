// Ring allreduce (sum) over any transport: a reduce-scatter then an allgather around the
// ring, each of n - 1 steps moving one n-th of the buffer to the right neighbour, so every
// rank sends and receives 2 (n - 1) / n of the buffer whatever n is (the "bus bandwidth" of
// nccl-tests). Chunks are cut into segments so that large buffers flow in pieces.
#pragma once

#include <span>
#include <vector>

#include "trainer/comm/transport.hpp"

namespace trellis::comm {

class RingAllreduce {
public:
    explicit RingAllreduce(Transport& transport, std::size_t segment_bytes = 1 << 20);
    // In place: afterwards every rank holds the element-wise sum over all ranks.
    void sum(std::span<float> data);

private:
    Transport& transport_;
    std::size_t segment_elements_;
    std::vector<float> incoming_;
};

}  // namespace trellis::comm
