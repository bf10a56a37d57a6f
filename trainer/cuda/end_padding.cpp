// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/end_padding.hpp"

#include "common/error.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

nn::Window EndPadding::setup(const nn::Window& resolved, const tensor::Shape& input, const std::string& layer) {
    const auto& p = resolved.padding;
    extra_h_ = p.bottom - p.top, extra_w_ = p.right - p.left;
    if (extra_h_ < 0 || extra_w_ < 0)
        throw UsageError(layer + ": " + resolved.str() +
                         " pads more before than after, which the CUDA backend does "
                         "not do (accepted: the same on both sides, or one more after, as TensorFlow's SAME)");
    input_ = input;
    padded_ = tensor::Shape{input[0], input[1], input[2] + extra_h_, input[3] + extra_w_};
    nn::Window cudnn = resolved;
    cudnn.padding = {p.top, p.left, p.top, p.left};
    return cudnn;
}

tensor::Tensor EndPadding::pad(CudaContext& context, const tensor::Tensor& input, tensor::DType type,
                               float fill) const {
    auto padded = context.allocate(padded_, type);
    kernels::pad_end(input.data(), padded.data(), type, int(input_[0]), int(input_[2]), int(input_[3]), int(input_[1]),
                     extra_h_, extra_w_, fill, context.stream());
    return padded;
}

tensor::Tensor EndPadding::crop(CudaContext& context, const tensor::Tensor& padded_grad, tensor::DType type) const {
    auto grad = context.allocate(input_, type);
    kernels::crop_end(padded_grad.data(), grad.data(), type, int(input_[0]), int(input_[2]), int(input_[3]),
                      int(input_[1]), extra_h_, extra_w_, context.stream());
    return grad;
}

}  // namespace trellis::cuda
