// SPDX-License-Identifier: Apache-2.0
// What to do when a checkpoint's global batch cannot be met. The global batch decides which
// samples make each step, so a resume must keep it; what may change is how many ranks share
// it and how each rank splits its part with --accumulate. The checkpoint knows only the
// number, so the trainer, which knows its ranks, says which counts and options would work.
#pragma once

#include <cstdint>
#include <string>

namespace trellis::train {

// For example "32 is not divisible by 3 ranks: resume on 1, 2, 4, 8, 16 or 32 ranks with
// --batch-size x --accumulate = 32 / ranks (on 2: --batch-size 16, or --batch-size 8
// --accumulate 2)". `ranks`: the ranks that share the batch ("workers" with parameter servers).
std::string global_batch_advice(std::int64_t global_batch, int count, const std::string& ranks);

}  // namespace trellis::train
