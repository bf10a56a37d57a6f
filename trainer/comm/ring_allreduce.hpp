// Ring allreduce (sum) over any transport: a reduce-scatter then an allgather around the
// ring, each of n - 1 steps moving one n-th of the buffer to the right neighbour, so every
// rank sends and receives 2 (n - 1) / n of the buffer whatever n is (the "bus bandwidth" of
// nccl-tests). Chunks are cut into segments so that large buffers flow in pieces. Values may
// travel compressed (bfloat16, float16); sums are always taken in float32, and every rank
// ends with the same values.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "trainer/comm/transport.hpp"
#include "trainer/comm/wire_format.hpp"

namespace trellis::comm {

class RingAllreduce {
public:
    explicit RingAllreduce(Transport& transport, std::size_t segment_bytes = 1 << 20,
                           WireFormat format = WireFormat::f32);
    // In place: afterwards every rank holds the element-wise sum over all ranks.
    void sum(std::span<float> data);

private:
    // Sends `out` to the right neighbour while receiving the left one's `in`, segment by
    // segment; the received values are added to `in` or replace it.
    void step(std::span<float> out, std::span<float> in, bool accumulate);

    Transport& transport_;
    std::size_t segment_elements_;
    WireFormat format_;
    std::vector<std::byte> outgoing_, incoming_;
};

}  // namespace trellis::comm
