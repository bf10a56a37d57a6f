// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/pooling.hpp"

#include <cmath>

#include "common/error.hpp"

#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

Pooling::Pooling(CudaContext& context, const nn::PoolingSpec& spec) : context_(context), spec_(spec) {
    check(cudnnCreatePoolingDescriptor(&pool_desc_), "cudnnCreatePoolingDescriptor");
}

Pooling::~Pooling() { cudnnDestroyPoolingDescriptor(pool_desc_); }

nn::TensorSpec Pooling::setup(const nn::TensorSpec& input, bool) {
    const auto& name_ = spec_.name;
    input_shape_ = input.shape;
    if (input_shape_.rank() != 4) throw UsageError(name_ + ": expects N x C x H x W, got " + input_shape_.str());
    output_shape_ = spec_.window.output_shape(input_shape_, input_shape_[1], name_);
    auto resolved = spec_.window.resolved(input_shape_[2], input_shape_[3]);
    // An explicit extra row would count in an average; max pooling ignores it (-infinity).
    if (spec_.kind == nn::PoolKind::average && !resolved.padding.symmetric())
        throw UsageError(name_ + ": average pooling " + spec_.window.str() +
                         " pads one side more than the other on a " + std::to_string(input_shape_[2]) + "x" +
                         std::to_string(input_shape_[3]) +
                         " input, which the CUDA backend does not do (accepted: max pooling, or stride 1)");
    auto w = end_padding_.setup(resolved, input_shape_, name_);
    auto mode = spec_.kind == nn::PoolKind::max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    check(cudnnSetPooling2dDescriptor(pool_desc_, mode, CUDNN_NOT_PROPAGATE_NAN, w.kernel_h, w.kernel_w, w.padding.top,
                                      w.padding.left, w.stride, w.stride),
          name_ + ": pooling descriptor");
    type_ = type_of(input);
    x_desc_ = TensorDescriptor(end_padding_.shape(), type_);
    y_desc_ = TensorDescriptor(output_shape_, type_);
    return context_.spec(output_shape_, type_);
}

tensor::Tensor Pooling::forward(const tensor::Tensor& given, nn::Mode mode) {
    auto timed = context_.profile().time("pooling", context_.stream());
    auto input = end_padding_.needed() ? end_padding_.pad(context_, given, type_, -INFINITY) : given;
    auto output = context_.allocate(output_shape_, type_);
    float one = 1, zero = 0;
    check(cudnnPoolingForward(context_.cudnn(), pool_desc_, &one, x_desc_, input.data(), &zero, y_desc_, output.data()),
          spec_.name + ": forward");
    if (mode == nn::Mode::train) {
        input_ = input;
        output_ = output;
    }
    return output;
}

tensor::Tensor Pooling::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("pooling", context_.stream());
    auto input_grad = context_.allocate(end_padding_.shape(), type_);
    float one = 1, zero = 0;
    check(cudnnPoolingBackward(context_.cudnn(), pool_desc_, &one, y_desc_, output_.data(), y_desc_, output_grad.data(),
                               x_desc_, input_.data(), &zero, x_desc_, input_grad.data()),
          spec_.name + ": backward");
    input_ = output_ = {};
    return end_padding_.needed() ? end_padding_.crop(context_, input_grad, type_) : input_grad;
}

nn::TensorSpec GlobalAveragePool::setup(const nn::TensorSpec& input, bool) {
    input_shape_ = input.shape;
    if (input_shape_.rank() != 4) throw UsageError(name_ + ": expects N x C x H x W, got " + input_shape_.str());
    type_ = type_of(input);
    return context_.spec(tensor::Shape{input_shape_[0], input_shape_[1]}, tensor::DType::f32);
}

tensor::Tensor GlobalAveragePool::forward(const tensor::Tensor& input, nn::Mode) {
    auto timed = context_.profile().time("pooling", context_.stream());
    int n = int(input_shape_[0]), c = int(input_shape_[1]), hw = int(input_shape_[2] * input_shape_[3]);
    auto output = context_.allocate(tensor::Shape{n, c}, tensor::DType::f32);
    kernels::global_average_pool(input.data(), type_, output.f32(), n, hw, c, context_.stream());
    return output;
}

tensor::Tensor GlobalAveragePool::backward(const tensor::Tensor& output_grad) {
    auto timed = context_.profile().time("pooling", context_.stream());
    int n = int(input_shape_[0]), c = int(input_shape_[1]), hw = int(input_shape_[2] * input_shape_[3]);
    auto input_grad = context_.allocate(input_shape_, type_);
    kernels::global_average_pool_backward(output_grad.f32(), input_grad.data(), type_, n, hw, c, context_.stream());
    return input_grad;
}

}  // namespace trellis::cuda
