// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/linear.hpp"

#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

Linear::Linear(const LinearSpec& spec) : parameters_(spec) {}

TensorSpec Linear::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    auto features = parameters_.resolve_input(input.shape);
    image_shape_ = input.shape.rank() == 4 ? input.shape : tensor::Shape{};
    input_shape_ = tensor::Shape{input.shape[0], features};
    output_shape_ = tensor::Shape{input_shape_[0], parameters_.out_features};
    auto src = plain_desc(input_shape_), weights = plain_desc(parameters_.weight.shape),
         bias = plain_desc(parameters_.bias.shape), dst = plain_desc(output_shape_);
    auto attr = attributes();
    forward_pd_ = inner_product_forward_pd(src, weights, bias, dst, attr);
    forward_ = dnnl::inner_product_forward(forward_pd_);
    backward_weights_pd_ = inner_product_backward_weights_pd(src, weights, bias, dst, forward_pd_, attr);
    backward_weights_ = dnnl::inner_product_backward_weights(backward_weights_pd_);
    if (input_grad_) {
        backward_data_pd_ = inner_product_backward_data_pd(src, weights, dst, forward_pd_, attr);
        backward_data_ = dnnl::inner_product_backward_data(backward_data_pd_);
    }
    return {output_shape_, nullptr};
}

tensor::Tensor Linear::forward(const tensor::Tensor& input, Mode) {
    if (image_shape_.rank() == 4) {  // plain N x C x H x W is the same memory as N x (C*H*W)
        auto plain = reordered(input, plain_desc(image_shape_));
        input_ = tensor::Tensor(input_shape_, tensor::DType::f32, nullptr, plain.memory());
    } else {
        input_ = reordered(input, forward_pd_.src_desc());
    }
    auto output = allocate(forward_pd_.dst_desc(), output_shape_);
    forward_.execute(stream(), {{DNNL_ARG_SRC, memory_of(input_)},
                                {DNNL_ARG_WEIGHTS, memory_of(forward_pd_.weights_desc(), parameters_.weight.value)},
                                {DNNL_ARG_BIAS, memory_of(forward_pd_.bias_desc(), parameters_.bias.value)},
                                {DNNL_ARG_DST, memory_of(output)},
                                {DNNL_ARG_SCRATCHPAD, scratchpad(forward_pd_.scratchpad_desc())}});
    return output;
}

tensor::Tensor Linear::backward(const tensor::Tensor& output_grad) {
    auto diff_dst = reordered(output_grad, forward_pd_.dst_desc());
    backward_weights_.execute(
        stream(),
        {{DNNL_ARG_SRC, memory_of(input_)},
         {DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
         {DNNL_ARG_DIFF_WEIGHTS, memory_of(backward_weights_pd_.diff_weights_desc(), parameters_.weight.grad)},
         {DNNL_ARG_DIFF_BIAS, memory_of(backward_weights_pd_.diff_bias_desc(), parameters_.bias.grad)},
         {DNNL_ARG_SCRATCHPAD, scratchpad(backward_weights_pd_.scratchpad_desc())}});
    tensor::Tensor input_grad;
    if (input_grad_) {
        input_grad = allocate(backward_data_pd_.diff_src_desc(), input_shape_);
        backward_data_.execute(
            stream(), {{DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                       {DNNL_ARG_WEIGHTS, memory_of(backward_data_pd_.weights_desc(), parameters_.weight.value)},
                       {DNNL_ARG_DIFF_SRC, memory_of(input_grad)},
                       {DNNL_ARG_SCRATCHPAD, scratchpad(backward_data_pd_.scratchpad_desc())}});
        if (image_shape_.rank() == 4)
            input_grad = tensor::Tensor(image_shape_, tensor::DType::f32, nullptr, input_grad.memory());
    }
    input_ = {};
    return input_grad;
}

}  // namespace trellis::nn::cpu
