// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/halving_doubling_allreduce.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace trellis::comm {

HalvingDoublingAllreduce::HalvingDoublingAllreduce(Transport& transport, std::size_t segment_bytes, WireFormat format)
    : Allreduce(transport, segment_bytes, format) {
    if (!applies(transport.size()))
        throw UsageError("halving-doubling allreduce needs a power-of-two number of ranks, not " +
                         std::to_string(transport.size()) + " (use ring or auto)");
}

void HalvingDoublingAllreduce::sum(std::span<float> data) {
    const int n = transport_.size(), rank = transport_.rank();
    if (n == 1 || data.empty()) return;
    // [lo, hi) is the range this rank still works on; partners at each step share it, since
    // it depends only on the bits already visited. The ranges are kept for the way back.
    std::size_t lo = 0, hi = data.size();
    std::vector<std::pair<std::size_t, std::size_t>> shared;
    for (int bit = 1; bit < n; bit <<= 1) {
        const int partner = rank ^ bit;
        const std::size_t middle = lo + (hi - lo) / 2;
        auto lower = data.subspan(lo, middle - lo), upper = data.subspan(middle, hi - middle);
        const bool keeps_lower = (rank & bit) == 0;
        exchange_.exchange(partner, keeps_lower ? upper : lower, partner, keeps_lower ? lower : upper, true);
        shared.emplace_back(lo, hi);
        (keeps_lower ? hi : lo) = middle;
    }
    exchange_.round_to_wire(data.subspan(lo, hi - lo));
    for (int bit = n >> 1; bit >= 1; bit >>= 1) {
        const int partner = rank ^ bit;
        auto [outer_lo, outer_hi] = shared.back();
        shared.pop_back();
        // The partner holds the other part of the range shared at this bit.
        auto theirs = lo == outer_lo ? data.subspan(hi, outer_hi - hi) : data.subspan(outer_lo, lo - outer_lo);
        exchange_.exchange(partner, data.subspan(lo, hi - lo), partner, theirs, false);
        lo = outer_lo;
        hi = outer_hi;
    }
}

}  // namespace trellis::comm
