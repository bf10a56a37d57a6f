// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/allreduce.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/comm/halving_doubling_allreduce.hpp"
#include "trainer/comm/hierarchical_allreduce.hpp"
#include "trainer/comm/ring_allreduce.hpp"

namespace trellis::comm {

const cli::Choices<AllreduceAlgorithm>& allreduce_algorithms() {
    static const cli::Choices<AllreduceAlgorithm> choices{{{"auto", AllreduceAlgorithm::automatic},
                                                           {"ring", AllreduceAlgorithm::ring},
                                                           {"halving-doubling", AllreduceAlgorithm::halving_doubling},
                                                           {"hierarchical", AllreduceAlgorithm::hierarchical}}};
    return choices;
}

std::unique_ptr<Allreduce> make_allreduce(Transport& transport, AllreduceAlgorithm algorithm, WireFormat format,
                                          std::size_t segment_bytes) {
    if (algorithm == AllreduceAlgorithm::automatic)
        algorithm = HierarchicalAllreduce::applies(transport)             ? AllreduceAlgorithm::hierarchical
                    : HalvingDoublingAllreduce::applies(transport.size()) ? AllreduceAlgorithm::halving_doubling
                                                                          : AllreduceAlgorithm::ring;
    if (algorithm == AllreduceAlgorithm::hierarchical)
        return std::make_unique<HierarchicalAllreduce>(transport, segment_bytes, format);
    if (algorithm == AllreduceAlgorithm::halving_doubling)
        return std::make_unique<HalvingDoublingAllreduce>(transport, segment_bytes, format);
    return std::make_unique<RingAllreduce>(transport, segment_bytes, format);
}

}  // namespace trellis::comm
