// SPDX-License-Identifier: Apache-2.0
// TensorFlow's SAME with a stride pads one pixel more after than before, and cuDNN pads both
// sides alike. The extra row and column are made explicit: the input is copied into a tensor
// larger at the end (zeros for a convolution, -infinity for max pooling), cuDNN pads the
// `before` amount on both sides of that, and the gradient is cropped back.
#pragma once

#include <string>

#include "trainer/nn/window.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class EndPadding {
public:
    // The window cuDNN runs (the padding before on both sides) for an N x C x H x W input;
    // throws UsageError naming `layer` where more is padded before than after.
    nn::Window setup(const nn::Window& resolved, const tensor::Shape& input, const std::string& layer);
    bool needed() const { return extra_h_ > 0 || extra_w_ > 0; }
    // The input as cuDNN reads it: `input`'s shape, or one larger at the end.
    const tensor::Shape& shape() const { return padded_; }

    tensor::Tensor pad(CudaContext& context, const tensor::Tensor& input, tensor::DType type, float fill) const;
    tensor::Tensor crop(CudaContext& context, const tensor::Tensor& padded_grad, tensor::DType type) const;

private:
    tensor::Shape input_, padded_;
    int extra_h_ = 0, extra_w_ = 0;
};

}  // namespace trellis::cuda
