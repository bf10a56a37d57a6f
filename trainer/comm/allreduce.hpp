// SPDX-License-Identifier: Apache-2.0
// Allreduce (sum, in place) over any transport, in one of two schedules. Both are a
// reduce-scatter followed by an allgather, so every rank sends and receives 2 (n - 1) / n of
// the buffer whatever n is (the "bus bandwidth" of nccl-tests); they differ in how many steps
// that takes, and every step is a point where a rank waits for another:
//   ring               n - 1 steps each way, always to the right neighbour; any n.
//   halving-doubling   log2 n steps each way (Rabenseifner's algorithm), exchanging halves
//                      with the rank whose number differs in one bit; n a power of two.
// `auto` takes halving-doubling where it applies: fewer waits, and the pairs of a step need
// no one else, which matters most when ranks share cores (measured in tests/perf). Where a job
// spans nodes with several ranks on each, `auto` takes the hierarchical schedule
// (hierarchical_allreduce.hpp), which runs one of these inside each node and one across them.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "common/cli.hpp"
#include "trainer/comm/segmented_exchange.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wire_format.hpp"

namespace trellis::comm {

enum class AllreduceAlgorithm { automatic, ring, halving_doubling, hierarchical };

// Its spellings: auto, ring, halving-doubling, hierarchical.
const cli::Choices<AllreduceAlgorithm>& allreduce_algorithms();

class Allreduce {
public:
    virtual ~Allreduce() = default;
    // Afterwards every rank holds the element-wise sum over all ranks (equal on every rank,
    // also when values travel compressed).
    virtual void sum(std::span<float> data) = 0;
    virtual AllreduceAlgorithm algorithm() const = 0;

protected:
    Allreduce(Transport& transport, std::size_t segment_bytes, WireFormat format)
        : transport_(transport), exchange_(transport, segment_bytes, format) {}

    Transport& transport_;
    SegmentedExchange exchange_;  // the one move both schedules are made of
};

// `automatic` resolves by the transport's placement and number of ranks; halving-doubling with
// a number of ranks that is not a power of two, and hierarchical where it does not apply, throw
// UsageError saying so.
std::unique_ptr<Allreduce> make_allreduce(Transport& transport, AllreduceAlgorithm algorithm,
                                          WireFormat format = WireFormat::f32, std::size_t segment_bytes = 1 << 20);

}  // namespace trellis::comm
