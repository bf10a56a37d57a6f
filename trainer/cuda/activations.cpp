// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/activations.hpp"

#include "common/error.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

nn::TensorSpec Relu::setup(const nn::TensorSpec& input, bool) {
    shape_ = input.shape;
    type_ = type_of(input);
    return input;
}

tensor::Tensor Relu::forward(const tensor::Tensor& input, nn::Mode mode) {
    auto timed = context_.profile().time("element-wise", context_.stream());
    auto output = context_.allocate(shape_, type_);
    kernels::relu(input.data(), output.data(), type_, std::size_t(shape_.elements()), context_.stream());
    if (mode == nn::Mode::train) output_ = output;
    return output;
}

tensor::Tensor Relu::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("element-wise", context_.stream());
    auto grad = context_.allocate(shape_, type_);
    kernels::relu_backward(output_.data(), output_grad.data(), grad.data(), type_, std::size_t(shape_.elements()),
                           context_.stream());
    output_ = {};
    return grad;
}

nn::TensorSpec Dropout::setup(const nn::TensorSpec& input, bool input_grad) {
    if (type_of(input) != tensor::DType::f32)
        throw UsageError(name_ + ": dropout takes the f32 N x F matrix of the head, got " + input.shape.str());
    return nn::Dropout::setup(input, input_grad);
}

tensor::Tensor Dropout::masked(const tensor::Tensor& in, std::uint64_t key, std::uint64_t threshold,
                               float scale) const {
    auto out = context_.allocate(shape_, tensor::DType::f32);
    kernels::dropout(in.f32(), out.f32(), std::size_t(shape_.elements()), key, threshold, scale, context_.stream());
    return out;
}

}  // namespace trellis::cuda
