// SPDX-License-Identifier: Apache-2.0
// Gradient buckets, cut from the end of the flat gradient buffer: the last layers' gradients
// are ready first in the backward pass, so the first bucket can travel while the rest is
// still being computed. The host allreduce and NCCL cut them the same way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace trellis::comm {

// [begin, end) ranges of `bucket_elements` (at least 1) from the end; the last may be smaller.
inline std::vector<std::pair<std::size_t, std::size_t>> gradient_buckets(std::size_t total,
                                                                         std::size_t bucket_elements) {
    bucket_elements = std::max<std::size_t>(bucket_elements, 1);
    std::vector<std::pair<std::size_t, std::size_t>> buckets;
    for (std::size_t end = total; end > 0;) {
        std::size_t begin = end > bucket_elements ? end - bucket_elements : 0;
        buckets.emplace_back(begin, end);
        end = begin;
    }
    return buckets;
}

}  // namespace trellis::comm
