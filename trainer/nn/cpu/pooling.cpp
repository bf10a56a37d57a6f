// SPDX-License-Identifier: Apache-2.0
#include "common/error.hpp"
#include "trainer/nn/cpu/pooling.hpp"
#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

Pooling::Pooling(std::string name, dnnl::algorithm algorithm, Window window, bool global, bool flatten)
    : name_(std::move(name)), algorithm_(algorithm), window_(window), global_(global), flatten_(flatten) {}

TensorSpec Pooling::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    input_shape_ = input.shape;
    if (input_shape_.rank() != 4) throw UsageError(name_ + ": expects N x C x H x W, got " + input_shape_.str());
    if (global_) window_ = Window::tf_valid(int(input_shape_[2]), int(input_shape_[3]));
    output_shape_ = window_.output_shape(input_shape_, input_shape_[1], name_);
    auto w = window_.resolved(input_shape_[2], input_shape_[3]);

    memory::dims kernel{w.kernel_h, w.kernel_w};
    WindowSteps steps{{w.stride, w.stride}, {w.padding.top, w.padding.left}, {w.padding.bottom, w.padding.right}};
    memory::desc dst(dims_of(output_shape_), memory::data_type::f32, memory::format_tag::any);
    auto attr = attributes();
    forward_pd_ = pooling_forward_pd(algorithm_, desc_of(input), dst, kernel, steps, attr);
    forward_ = dnnl::pooling_forward(forward_pd_);
    if (input_grad_) {
        backward_pd_ = pooling_backward_pd(algorithm_, forward_pd_.src_desc(), forward_pd_.dst_desc(), kernel, steps,
                                           forward_pd_, attr);
        backward_ = dnnl::pooling_backward(backward_pd_);
    }
    if (flatten_)
        return {tensor::Shape{output_shape_[0], output_shape_[1] * output_shape_[2] * output_shape_[3]}, nullptr};
    return spec_of(forward_pd_.dst_desc(), output_shape_);
}

tensor::Tensor Pooling::forward(const tensor::Tensor& input, Mode) {
    auto src = reordered(input, forward_pd_.src_desc());
    auto output = allocate(forward_pd_.dst_desc(), output_shape_);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory_of(src)},
                                         {DNNL_ARG_DST, memory_of(output)},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(forward_pd_.scratchpad_desc())}};
    if (forward_pd_.workspace_desc().get_size() > 0) {
        workspace_ = allocate(forward_pd_.workspace_desc(), tensor::Shape{});
        args[DNNL_ARG_WORKSPACE] = memory_of(workspace_);
    }
    forward_.execute(stream(), args);
    if (!flatten_) return output;
    // Plain NCHW with 1x1 (or any) spatial size is the same memory as N x (C*H*W).
    auto plain = reordered(output, plain_desc(output_shape_));
    return tensor::Tensor(tensor::Shape{output_shape_[0], output_shape_[1] * output_shape_[2] * output_shape_[3]},
                          tensor::DType::f32, nullptr, plain.memory());
}

tensor::Tensor Pooling::backward(const tensor::Tensor& output_grad) {
    tensor::Tensor input_grad;
    if (input_grad_) {
        auto grad = output_grad;
        if (flatten_)  // the flat gradient is plain NCHW memory
            grad = tensor::Tensor(output_shape_, tensor::DType::f32, nullptr, output_grad.memory());
        auto diff_dst = reordered(grad, backward_pd_.diff_dst_desc());
        input_grad = allocate(backward_pd_.diff_src_desc(), input_shape_);
        std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                                             {DNNL_ARG_DIFF_SRC, memory_of(input_grad)},
                                             {DNNL_ARG_SCRATCHPAD, scratchpad(backward_pd_.scratchpad_desc())}};
        if (!workspace_.empty()) args[DNNL_ARG_WORKSPACE] = memory_of(workspace_);
        backward_.execute(stream(), args);
    }
    workspace_ = {};
    return input_grad;
}

}  // namespace trellis::nn::cpu
