// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/residual_join.hpp"

#include "trainer/cuda/kernels.hpp"

#include "trainer/nn/layer_parameters.hpp"

namespace trellis::cuda {

nn::TensorSpec ResidualJoin::setup(const nn::TensorSpec& a, const nn::TensorSpec& b) {
    nn::check_same_shape(name_, a.shape, b.shape);
    shape_ = a.shape;
    type_ = type_of(a);
    return context_.spec(shape_, type_);
}

tensor::Tensor ResidualJoin::forward(const tensor::Tensor& a, const tensor::Tensor& b, nn::Mode mode) {
    auto timed = context_.profile().time("element-wise", context_.stream());
    auto output = context_.allocate(shape_, type_);
    kernels::add_relu(a.data(), b.data(), output.data(), type_, std::size_t(shape_.elements()), context_.stream());
    if (mode == nn::Mode::train) output_ = output;  // the ReLU's backward reads it
    return output;
}

tensor::Tensor ResidualJoin::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("element-wise", context_.stream());
    auto grad = context_.allocate(shape_, type_);
    kernels::relu_backward(output_.data(), output_grad.data(), grad.data(), type_, std::size_t(shape_.elements()),
                           context_.stream());
    output_ = {};
    return grad;
}

void ResidualJoin::accumulate(tensor::Tensor& target, const tensor::Tensor& addend) {
    auto timed = context_.profile().time("element-wise", context_.stream());
    kernels::accumulate(target.data(), addend.data(), type_, std::size_t(shape_.elements()), context_.stream());
}

}  // namespace trellis::cuda
