#include "trainer/comm/allreduce.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/comm/halving_doubling_allreduce.hpp"
#include "trainer/comm/ring_allreduce.hpp"

namespace trellis::comm {

AllreduceAlgorithm parse_allreduce_algorithm(const std::string& text) {
    if (text == "auto") return AllreduceAlgorithm::automatic;
    if (text == "ring") return AllreduceAlgorithm::ring;
    if (text == "halving-doubling") return AllreduceAlgorithm::halving_doubling;
    throw UsageError("unknown allreduce algorithm '" + text + "' (accepted: auto, ring, halving-doubling)");
}

std::string allreduce_algorithm_name(AllreduceAlgorithm algorithm) {
    switch (algorithm) {
        case AllreduceAlgorithm::ring: return "ring";
        case AllreduceAlgorithm::halving_doubling: return "halving-doubling";
        case AllreduceAlgorithm::automatic: break;
    }
    return "auto";
}

std::unique_ptr<Allreduce> make_allreduce(Transport& transport, AllreduceAlgorithm algorithm, WireFormat format,
                                          std::size_t segment_bytes) {
    if (algorithm == AllreduceAlgorithm::automatic)
        algorithm = HalvingDoublingAllreduce::applies(transport.size()) ? AllreduceAlgorithm::halving_doubling
                                                                        : AllreduceAlgorithm::ring;
    if (algorithm == AllreduceAlgorithm::halving_doubling)
        return std::make_unique<HalvingDoublingAllreduce>(transport, segment_bytes, format);
    return std::make_unique<RingAllreduce>(transport, segment_bytes, format);
}

}  // namespace trellis::comm
