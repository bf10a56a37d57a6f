// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/residual_join.hpp"

#include "trainer/nn/cpu/dnnl_version.hpp"
#include "trainer/nn/layer_parameters.hpp"

namespace trellis::nn::cpu {

TensorSpec ResidualJoin::setup(const TensorSpec& a, const TensorSpec& b) {
    check_same_shape(name_, a.shape, b.shape);
    shape_ = a.shape;
    data_ = desc_of(a);
    auto attr = attributes();
    dnnl::post_ops relu;
    append_eltwise(relu, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(relu);
    add_relu_pd_ = binary_pd(dnnl::algorithm::binary_add, data_, data_, data_, attr);
    add_relu_ = dnnl::binary(add_relu_pd_);
    relu_gradient_.setup(data_, shape_);
    return spec_of(data_, shape_);
}

tensor::Tensor ResidualJoin::forward(const tensor::Tensor& a, const tensor::Tensor& b, Mode mode) {
    auto a_in = reordered(a, data_), b_in = reordered(b, data_);
    auto output = allocate(data_, shape_);
    add_relu_.execute(stream(), {{DNNL_ARG_SRC_0, memory_of(a_in)},
                                 {DNNL_ARG_SRC_1, memory_of(b_in)},
                                 {DNNL_ARG_DST, memory_of(output)},
                                 {DNNL_ARG_SCRATCHPAD, scratchpad(add_relu_pd_.scratchpad_desc())}});
    if (mode == Mode::train) output_ = output;  // the ReLU's backward reads it
    return output;
}

tensor::Tensor ResidualJoin::backward(const tensor::Tensor& output_grad) {
    auto grad = relu_gradient_(output_, output_grad);
    output_ = {};
    return grad;
}

}  // namespace trellis::nn::cpu
