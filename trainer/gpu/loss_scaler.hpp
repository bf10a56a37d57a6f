// SPDX-License-Identifier: Apache-2.0
// fp16 loss scaling as in Micikevicius et al.: start high, halve on overflow, double after a
// run of finite steps, kept within [1, 2^24]. Host arithmetic only: the CUDA module keeps one
// and feeds it each step's verdict, at once or a step late (the overflow-on-device speed item).
// Inline, so that the module needs no symbol of the program for it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "trainer/gpu/accelerator.hpp"

namespace trellis::gpu {

class LossScaler {
public:
    static constexpr float initial_scale = 65536.0f;
    static constexpr float max_scale = 16777216.0f;  // 2^24
    static constexpr int growth_interval = 2000;

    // What the next backward pass multiplies the loss gradient by.
    float scale() const { return scale_; }
    // One step's verdict, `used` the scale its backward pass multiplied by: an overflow halves
    // that scale; a run of growth_interval finite steps doubles it. A verdict taken in a step
    // late may find the scale already halved by the step before, whose backward pass ran at the
    // same scale: it is not halved again.
    void record(bool overflowed, float used) {
        if (overflowed) {
            scale_ = std::max(std::min(scale_, used / 2), 1.0f);
            finite_steps_ = 0;
        } else if (++finite_steps_ % growth_interval == 0) {
            scale_ = std::min(scale_ * 2, max_scale);
        }
    }
    LossScale state() const { return {scale_, finite_steps_}; }
    // A checkpoint's state, the scale clamped to the bounds; a scale of 0 (none saved) is ignored.
    void restore(LossScale state) {
        if (state.scale <= 0) return;
        scale_ = std::clamp(state.scale, 1.0f, max_scale);
        finite_steps_ = state.finite_steps;
    }

private:
    float scale_ = initial_scale;
    std::int64_t finite_steps_ = 0;
};

}  // namespace trellis::gpu
