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

}  // namespace trellis::comm
