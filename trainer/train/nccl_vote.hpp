// SPDX-License-Identifier: Apache-2.0
// --transport auto's choice of NCCL for GPU ranks, made by every rank together: NCCL only
// when every rank has a GPU of its own (NCCL refuses two ranks on one device) and NCCL loads,
// so that no rank waits in NCCL for one that took the host path. Each rank fills its slots of
// a vector that is then summed over the ranks (a rank's slots are zero on the others): 1 when
// it has a GPU, and where it can use NCCL a 40-bit hash of its host and GPU, in two exact
// floats.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace trellis::train {

struct NcclDecision {
    bool use = false;
    std::string why_not;  // empty where no rank has a GPU: nothing to explain
};

// `why_not_here`: empty when this rank can use NCCL, else why not ("no GPU", NCCL's error).
inline std::vector<float> nccl_vote(int size, int rank, bool has_gpu, const std::string& why_not_here,
                                    const std::string& host_and_gpu) {
    std::vector<float> slots(2 * std::size_t(size) + 1, 0.0f);
    slots[2 * std::size_t(size)] = has_gpu ? 1.0f : 0.0f;
    if (why_not_here.empty()) {
        auto hash = std::hash<std::string>{}(host_and_gpu);
        slots[2 * std::size_t(rank)] = float(1 + (hash & 0xFFFFF));  // below 2^24: exact
        slots[2 * std::size_t(rank) + 1] = float((hash >> 20) & 0xFFFFF);
    }
    return slots;
}

// What the summed votes decide, the same on every rank.
inline NcclDecision count_nccl_votes(std::span<const float> sums, int rank, const std::string& why_not_here) {
    std::size_t size = (sums.size() - 1) / 2;
    if (sums[2 * size] == 0) return {};
    for (std::size_t r = 0; r < size; ++r) {
        if (sums[2 * r] == 0)
            return {false,
                    "rank " + std::to_string(r) + (int(r) == rank ? ": " + why_not_here : " has no GPU or no NCCL")};
        for (std::size_t other = 0; other < r; ++other)
            if (sums[2 * r] == sums[2 * other] && sums[2 * r + 1] == sums[2 * other + 1])
                return {false, "ranks " + std::to_string(other) + " and " + std::to_string(r) + " share a GPU"};
    }
    return {true, {}};
}

}  // namespace trellis::train
