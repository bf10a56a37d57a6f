// SPDX-License-Identifier: Apache-2.0
// Rabenseifner's allreduce for a power-of-two number of ranks. Reduce-scatter by recursive
// halving: in step k a rank and its partner (the rank differing in bit k) split the range they
// share, each keeps one half and sends the other, adding what it receives; after log2 n steps
// each rank holds the finished sum of one n-th. Allgather by recursive doubling retraces the
// steps backwards, each pair swapping its finished halves.
#pragma once

#include <cstddef>
#include <span>

#include "common/error.hpp"
#include "trainer/comm/allreduce.hpp"

namespace trellis::comm {

class HalvingDoublingAllreduce : public Allreduce {
public:
    static bool applies(int ranks) { return ranks > 0 && (ranks & (ranks - 1)) == 0; }

    // Throws UsageError unless the transport's number of ranks is a power of two.
    explicit HalvingDoublingAllreduce(Transport& transport, std::size_t segment_bytes = 1 << 20,
                                      WireFormat format = WireFormat::f32);
    void sum(std::span<float> data) override;
    AllreduceAlgorithm algorithm() const override { return AllreduceAlgorithm::halving_doubling; }
};

}  // namespace trellis::comm
