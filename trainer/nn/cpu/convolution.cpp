// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/convolution.hpp"

#include <cmath>

#include "trainer/nn/cpu/dnnl_version.hpp"
#include "trainer/nn/cpu/reference_kernels.hpp"

namespace trellis::nn::cpu {

Convolution::Convolution(const ConvolutionSpec& spec) : parameters_(spec), spec_(parameters_.spec) {}

TensorSpec Convolution::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    const auto& in = input.shape;
    output_shape_ = parameters_.output_shape(in);
    input_shape_ = in;

    auto any = memory::format_tag::any;
    auto f32 = memory::data_type::f32;
    memory::desc src(dims_of(in), f32, any);
    memory::desc weights(dims_of(parameters_.weight.shape), f32, any);
    memory::desc dst(dims_of(output_shape_), f32, any);
    auto window = spec_.window.resolved(in[2], in[3]);
    WindowSteps steps{{window.stride, window.stride},
                      {window.padding.top, window.padding.left},
                      {window.padding.bottom, window.padding.right}};
    auto attr = attributes();
    auto skip = Implementation::past_reference;

    auto bias = spec_.bias ? plain_desc(parameters_.bias.shape) : memory::desc();
    forward_pd_ = convolution_forward_pd(src, weights, bias, dst, steps, attr, skip);
    if (is_reference(forward_pd_.impl_info_str())) refuse_reference(spec_.name, "forward", forward_pd_.impl_info_str());
    forward_ = dnnl::convolution_forward(forward_pd_);
    // Gradients keep the layouts of the activations they belong to, unless oneDNN has only
    // its reference kernel for those: then the layouts it likes (a reorder of each operand
    // costs far less than a reference pass; at 2x2 maps under AVX2 that is its GEMM path).
    auto diff_bias = spec_.bias ? forward_pd_.bias_desc() : memory::desc();
    auto backward_weights = [&](const memory::desc& activations, const memory::desc& gradients) {
        backward_weights_pd_ =
            convolution_backward_weights_pd(activations, weights, diff_bias, gradients, steps, forward_pd_, attr, skip);
        return !is_reference(backward_weights_pd_.impl_info_str());
    };
    if (!backward_weights(forward_pd_.src_desc(), forward_pd_.dst_desc()) && !backward_weights(src, dst))
        refuse_reference(spec_.name, "backward weights", backward_weights_pd_.impl_info_str());
    backward_weights_ = dnnl::convolution_backward_weights(backward_weights_pd_);
    if (input_grad_) {
        auto backward_data = [&](const memory::desc& activations, const memory::desc& gradients) {
            backward_data_pd_ =
                convolution_backward_data_pd(activations, weights, gradients, steps, forward_pd_, attr, skip);
            return !is_reference(backward_data_pd_.impl_info_str());
        };
        if (!backward_data(forward_pd_.src_desc(), forward_pd_.dst_desc()) && !backward_data(src, dst))
            refuse_reference(spec_.name, "backward data", backward_data_pd_.impl_info_str());
        backward_data_ = dnnl::convolution_backward_data(backward_data_pd_);
    }
    return spec_of(forward_pd_.dst_desc(), output_shape_);
}

std::string Convolution::implementations() const {
    std::string text = std::string("forward ") + forward_pd_.impl_info_str() + ", backward weights " +
                       backward_weights_pd_.impl_info_str();
    if (input_grad_) text += std::string(", backward data ") + backward_data_pd_.impl_info_str();
    return text;
}

tensor::Tensor Convolution::forward(const tensor::Tensor& input, Mode) {
    input_ = reordered(input, forward_pd_.src_desc());
    auto plain_weights = memory_of(plain_desc(parameters_.weight.shape), parameters_.weight.value);
    if (forward_pd_.weights_desc() == plain_weights.get_desc()) {
        forward_weights_ = {};
    } else {
        if (forward_weights_.empty()) forward_weights_ = allocate(forward_pd_.weights_desc(), parameters_.weight.shape);
        reorder_into(plain_weights, memory_of(forward_weights_));
    }
    auto output = allocate(forward_pd_.dst_desc(), output_shape_);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory_of(input_)},
        {DNNL_ARG_WEIGHTS, forward_weights_.empty() ? plain_weights : memory_of(forward_weights_)},
        {DNNL_ARG_DST, memory_of(output)},
        {DNNL_ARG_SCRATCHPAD, scratchpad(forward_pd_.scratchpad_desc())}};
    if (spec_.bias) args[DNNL_ARG_BIAS] = memory_of(forward_pd_.bias_desc(), parameters_.bias.value);
    forward_.execute(stream(), args);
    return output;
}

tensor::Tensor Convolution::backward(const tensor::Tensor& output_grad) {
    auto diff_dst = reordered(output_grad, forward_pd_.dst_desc());
    auto plain_weights_desc = plain_desc(parameters_.weight.shape);

    // Weight gradient, written into the parameter store's plain buffer.
    auto diff_weights_desc = backward_weights_pd_.diff_weights_desc();
    tensor::Tensor blocked_grad;
    memory diff_weights = memory_of(plain_weights_desc, parameters_.weight.grad);
    if (diff_weights_desc != plain_weights_desc) {
        blocked_grad = allocate(diff_weights_desc, parameters_.weight.shape);
        diff_weights = memory_of(blocked_grad);
    }
    auto activations = reordered(input_, backward_weights_pd_.src_desc());
    auto gradients = reordered(diff_dst, backward_weights_pd_.diff_dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory_of(activations)},
                                         {DNNL_ARG_DIFF_DST, memory_of(gradients)},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(backward_weights_pd_.scratchpad_desc())}};
    if (spec_.bias) args[DNNL_ARG_DIFF_BIAS] = memory_of(backward_weights_pd_.diff_bias_desc(), parameters_.bias.grad);
    backward_weights_.execute(stream(), args);
    if (!blocked_grad.empty()) reorder_into(diff_weights, memory_of(plain_weights_desc, parameters_.weight.grad));
    input_ = {};
    activations = {};

    tensor::Tensor input_grad;
    if (input_grad_) {
        auto weights_desc = backward_data_pd_.weights_desc();
        memory weights = memory_of(plain_weights_desc, parameters_.weight.value);
        tensor::Tensor converted;
        if (weights_desc == forward_pd_.weights_desc() && !forward_weights_.empty()) {
            weights = memory_of(forward_weights_);
        } else if (weights_desc != plain_weights_desc) {
            converted = allocate(weights_desc, parameters_.weight.shape);
            reorder_into(weights, memory_of(converted));
            weights = memory_of(converted);
        }
        input_grad = allocate(backward_data_pd_.diff_src_desc(), input_shape_);
        auto data_gradients = reordered(diff_dst, backward_data_pd_.diff_dst_desc());
        backward_data_.execute(stream(), {{DNNL_ARG_DIFF_DST, memory_of(data_gradients)},
                                          {DNNL_ARG_WEIGHTS, weights},
                                          {DNNL_ARG_DIFF_SRC, memory_of(input_grad)},
                                          {DNNL_ARG_SCRATCHPAD, scratchpad(backward_data_pd_.scratchpad_desc())}});
    }
    return input_grad;
}

}  // namespace trellis::nn::cpu
