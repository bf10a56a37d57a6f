// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/global_batch_advice.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace trellis::train {
namespace {

// "--batch-size 16, or --batch-size 8 --accumulate 2": the second form for ranks short of memory.
std::string per_rank_options(std::int64_t per_rank) {
    std::string options = "--batch-size " + std::to_string(per_rank);
    if (per_rank % 2 == 0 && per_rank > 1)
        options += ", or --batch-size " + std::to_string(per_rank / 2) + " --accumulate 2";
    return options;
}

}  // namespace

std::string global_batch_advice(std::int64_t global_batch, int count, const std::string& ranks) {
    if (global_batch <= 0 || count <= 0) return {};
    if (global_batch % count == 0)
        return "on " + std::to_string(count) + " " + ranks + ": " + per_rank_options(global_batch / count);
    std::vector<std::int64_t> divisors;
    for (std::int64_t d = 1; d * d <= global_batch; ++d)
        if (global_batch % d == 0) {
            divisors.push_back(d);
            if (d != global_batch / d) divisors.push_back(global_batch / d);
        }
    // The most below this run's: the ranks it already has can always give that many.
    std::int64_t fewer = 1;
    for (auto d : divisors)
        if (d < count) fewer = std::max(fewer, d);
    // The counts nearest to this run's are the ones a user can get; a long list would hide them.
    std::sort(divisors.begin(), divisors.end(), [count](std::int64_t a, std::int64_t b) {
        return std::llabs(a - count) != std::llabs(b - count) ? std::llabs(a - count) < std::llabs(b - count) : a < b;
    });
    divisors.resize(std::min<std::size_t>(divisors.size(), 6));
    std::sort(divisors.begin(), divisors.end());
    std::string list;
    for (std::size_t i = 0; i < divisors.size(); ++i)
        list += (i == 0 ? "" : i + 1 == divisors.size() ? " or " : ", ") + std::to_string(divisors[i]);
    return std::to_string(global_batch) + " is not divisible by " + std::to_string(count) + " " + ranks +
           ": resume on " + list + " " + ranks + " with --batch-size x --accumulate = " + std::to_string(global_batch) +
           " / " + ranks + " (on " + std::to_string(fewer) + ": " + per_rank_options(global_batch / fewer) + ")";
}

}  // namespace trellis::train
