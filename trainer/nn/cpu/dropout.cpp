// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/dropout.hpp"

#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

tensor::Tensor Dropout::masked(const tensor::Tensor& in, std::uint64_t key, std::uint64_t threshold,
                               float scale) const {
    auto plain = reordered(in, plain_desc(shape_));
    tensor::Tensor out(shape_);
    const float* x = plain.f32();
    float* y = out.f32();
    for (std::int64_t i = 0; i < shape_.elements(); ++i)
        y[i] = keeps(key, std::uint64_t(i), threshold) ? x[i] * scale : 0.0f;
    return out;
}

}  // namespace trellis::nn::cpu
