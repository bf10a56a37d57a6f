// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/relu.hpp"

#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

namespace {
constexpr auto relu_from_output = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
}

void ReluGradient::setup(const memory::desc& data, const tensor::Shape& shape) {
    data_ = data, shape_ = shape;
    auto hint = eltwise_forward_pd(relu_from_output, data);
    pd_ = eltwise_backward_pd(relu_from_output, data, hint, attributes());
    primitive_ = dnnl::eltwise_backward(pd_);
}

tensor::Tensor ReluGradient::operator()(const tensor::Tensor& output, const tensor::Tensor& output_grad) {
    auto diff_dst = reordered(output_grad, data_);
    auto grad = allocate(data_, shape_);
    primitive_.execute(stream(), {{DNNL_ARG_DST, memory_of(output)},
                                  {DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                                  {DNNL_ARG_DIFF_SRC, memory_of(grad)},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad(pd_.scratchpad_desc())}});
    return grad;
}

TensorSpec Relu::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    data_ = desc_of(input);
    forward_pd_ = eltwise_forward_pd(relu_from_output, data_, attributes());
    forward_ = dnnl::eltwise_forward(forward_pd_);
    gradient_.setup(data_, shape_);
    return input;
}

tensor::Tensor Relu::forward(const tensor::Tensor& input, Mode mode) {
    auto src = reordered(input, data_);
    auto output = allocate(data_, shape_);
    forward_.execute(stream(), {{DNNL_ARG_SRC, memory_of(src)},
                                {DNNL_ARG_DST, memory_of(output)},
                                {DNNL_ARG_SCRATCHPAD, scratchpad(forward_pd_.scratchpad_desc())}});
    if (mode == Mode::train) output_ = output;
    return output;
}

tensor::Tensor Relu::backward(const tensor::Tensor& output_grad) {
    auto grad = gradient_(output_, output_grad);
    output_ = {};
    return grad;
}

}  // namespace trellis::nn::cpu
