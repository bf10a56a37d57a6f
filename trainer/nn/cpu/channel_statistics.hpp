// SPDX-License-Identifier: Apache-2.0
// A batch's mean and (biased) variance per channel, over N, H and W of a 4-d tensor in any
// layout oneDNN gives the CPU backend (plain, channels-last, or channels blocked by 8 or 16).
// oneDNN's own batch norm sums each channel in float32, one long sum per thread: over a
// 149x149 map of 2 images that loses about sqrt(44402) ulps of the mean, and every later layer
// inherits it (inception4 drifted 3.5x further from float64 than PyTorch, which accumulates in
// double). Here the sums are in double, shifted by one sample of the channel so that a large
// mean does not cancel the variance: both come out correct to float32's last bit.
#pragma once

#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace trellis::nn::cpu {

struct ChannelStatistics {
    std::vector<float> mean, variance;
};

// `desc` is a 4-d f32 descriptor (N, C, H, W) with at most one inner block, on C; `data` its
// buffer. Throws std::invalid_argument for another layout.
void channel_statistics(const dnnl::memory::desc& desc, const float* data, ChannelStatistics& out);

}  // namespace trellis::nn::cpu
