// SPDX-License-Identifier: Apache-2.0
// Ring allreduce: a reduce-scatter then an allgather around the ring, each of n - 1 steps
// moving one n-th of the buffer to the right neighbour. Works for any number of ranks.
#pragma once

#include <cstddef>
#include <span>

#include "trainer/comm/allreduce.hpp"

namespace trellis::comm {

class RingAllreduce : public Allreduce {
public:
    explicit RingAllreduce(Transport& transport, std::size_t segment_bytes = 1 << 20,
                           WireFormat format = WireFormat::f32)
        : Allreduce(transport, segment_bytes, format) {}
    void sum(std::span<float> data) override;
    AllreduceAlgorithm algorithm() const override { return AllreduceAlgorithm::ring; }
};

// The two halves of the ring on `exchange`'s transport, for the schedules made of them. Chunk c
// of n covers [size c / n, size (c + 1) / n). The reduce-scatter leaves rank r with the sum of
// chunk r + 1 (returned, not yet rounded to the wire format); the allgather passes each rank's
// finished chunk around.
std::span<float> ring_reduce_scatter(SegmentedExchange& exchange, int rank, int n, std::span<float> data);
void ring_allgather(SegmentedExchange& exchange, int rank, int n, std::span<float> data);

}  // namespace trellis::comm
