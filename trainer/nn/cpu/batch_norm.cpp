// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/batch_norm.hpp"

#include <stdexcept>

#include "trainer/nn/cpu/dnnl_version.hpp"
#include "trainer/nn/cpu/reference_kernels.hpp"

namespace trellis::nn::cpu {

namespace {
memory::desc channel_vector(int channels) {
    return memory::desc({channels}, memory::data_type::f32, memory::format_tag::x);
}
}  // namespace

BatchNorm::BatchNorm(const BatchNormSpec& spec) : parameters_(spec), spec_(parameters_.spec) {}

TensorSpec BatchNorm::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    parameters_.check_input(shape_);
    reduced_count_ = shape_[0] * shape_[2] * shape_[3];
    auto data = desc_of(input);
    using flags = dnnl::normalization_flags;
    auto epsilon = spec_.epsilon;
    auto attr = attributes();
    auto make = [&](bool fuse_relu) {
        auto learned = (spec_.learn_scale ? flags::use_scale : flags::none) | flags::use_shift |
                       (fuse_relu ? flags::fuse_norm_relu : flags::none);
        training_pd_ = batch_norm_forward_pd(dnnl::prop_kind::forward_training, data, epsilon, learned, attr);
        normalise_pd_ = batch_norm_forward_pd(dnnl::prop_kind::forward_training, data, epsilon,
                                              learned | flags::use_global_stats, attr);
        inference_pd_ = batch_norm_forward_pd(dnnl::prop_kind::forward_inference, data, epsilon,
                                              learned | flags::use_global_stats, attr);
        // The input gradient is always computed: it is also the path to gamma's producer.
        backward_pd_ = batch_norm_backward_pd(data, epsilon, learned, training_pd_, attr);
        return !is_reference(normalise_pd_.impl_info_str()) && !is_reference(inference_pd_.impl_info_str()) &&
               !is_reference(backward_pd_.impl_info_str());
    };
    bool optimised = make(spec_.relu);
    separate_relu_ = spec_.relu && !optimised;
    if (separate_relu_) {
        make(false);
        auto relu = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
        relu_pd_ = eltwise_forward_pd(relu, data, attr);
        relu_backward_pd_ = eltwise_backward_pd(relu, data, relu_pd_, attr);
        relu_ = dnnl::eltwise_forward(relu_pd_);
        relu_backward_ = dnnl::eltwise_backward(relu_backward_pd_);
    }
    // The backward pass reads the ReLU mask the forward pass wrote: both must lay it out alike.
    if (fused_relu() && normalise_pd_.workspace_desc() != training_pd_.workspace_desc())
        throw std::runtime_error("batch norm " + spec_.name +
                                 ": oneDNN lays out the ReLU mask differently "
                                 "with given statistics (" +
                                 normalise_pd_.impl_info_str() + ")");
    normalise_ = dnnl::batch_normalization_forward(normalise_pd_);
    inference_ = dnnl::batch_normalization_forward(inference_pd_);
    backward_ = dnnl::batch_normalization_backward(backward_pd_);
    return input;
}

tensor::Tensor BatchNorm::forward(const tensor::Tensor& input, Mode mode) {
    auto data = training_pd_.src_desc();
    input_ = reordered(input, data);
    auto output = allocate(data, shape_);
    auto vec = channel_vector(spec_.channels);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory_of(input_)},
                                         {DNNL_ARG_DST, memory_of(output)},
                                         {DNNL_ARG_SHIFT, memory_of(vec, parameters_.shift.value)}};
    if (spec_.learn_scale) args[DNNL_ARG_SCALE] = memory_of(vec, parameters_.scale.value);
    if (mode == Mode::eval) {
        args[DNNL_ARG_MEAN] = memory_of(vec, parameters_.running_mean.value);
        args[DNNL_ARG_VARIANCE] = memory_of(vec, parameters_.running_variance.value);
        args[DNNL_ARG_SCRATCHPAD] = scratchpad(inference_pd_.scratchpad_desc());
        inference_.execute(stream(), args);
        input_ = {};
        if (separate_relu_) apply_relu(output);
        return output;
    }
    channel_statistics(data, input_.f32(), batch_);
    args[DNNL_ARG_MEAN] = memory_of(vec, batch_.mean.data());
    args[DNNL_ARG_VARIANCE] = memory_of(vec, batch_.variance.data());
    args[DNNL_ARG_SCRATCHPAD] = scratchpad(normalise_pd_.scratchpad_desc());
    if (fused_relu()) {
        workspace_ = allocate(normalise_pd_.workspace_desc(), tensor::Shape{});
        args[DNNL_ARG_WORKSPACE] = memory_of(workspace_);
    }
    normalise_.execute(stream(), args);
    if (separate_relu_) {
        apply_relu(output);
        output_ = output;
    }
    update_running_statistics();
    return output;
}

void BatchNorm::apply_relu(tensor::Tensor& output) {
    auto data = memory_of(output);
    relu_.execute(
        stream(),
        {{DNNL_ARG_SRC, data}, {DNNL_ARG_DST, data}, {DNNL_ARG_SCRATCHPAD, scratchpad(relu_pd_.scratchpad_desc())}});
}

void BatchNorm::update_running_statistics() {
    // The running variance is the unbiased estimate, as PyTorch and cuDNN keep it.
    float unbias = reduced_count_ > 1 ? float(reduced_count_) / float(reduced_count_ - 1) : 1.0f;
    float momentum = spec_.momentum;
    for (int c = 0; c < spec_.channels; ++c) {
        parameters_.running_mean.value[c] =
            (1 - momentum) * parameters_.running_mean.value[c] + momentum * batch_.mean[c];
        parameters_.running_variance.value[c] =
            (1 - momentum) * parameters_.running_variance.value[c] + momentum * batch_.variance[c] * unbias;
    }
}

tensor::Tensor BatchNorm::backward(const tensor::Tensor& output_grad) {
    auto data = training_pd_.src_desc();
    auto diff_dst = reordered(output_grad, data);
    if (separate_relu_) {
        auto through_relu = allocate(data, shape_);
        relu_backward_.execute(stream(), {{DNNL_ARG_DST, memory_of(output_)},
                                          {DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                                          {DNNL_ARG_DIFF_SRC, memory_of(through_relu)},
                                          {DNNL_ARG_SCRATCHPAD, scratchpad(relu_backward_pd_.scratchpad_desc())}});
        diff_dst = through_relu;
        output_ = {};
    }
    auto input_grad = allocate(data, shape_);
    auto vec = channel_vector(spec_.channels);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory_of(input_)},
                                         {DNNL_ARG_MEAN, memory_of(vec, batch_.mean.data())},
                                         {DNNL_ARG_VARIANCE, memory_of(vec, batch_.variance.data())},
                                         {DNNL_ARG_DIFF_DST, memory_of(diff_dst)},
                                         {DNNL_ARG_DIFF_SRC, memory_of(input_grad)},
                                         {DNNL_ARG_DIFF_SHIFT, memory_of(vec, parameters_.shift.grad)},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(backward_pd_.scratchpad_desc())}};
    if (batch_norm_backward_takes_shift) args[DNNL_ARG_SHIFT] = memory_of(vec, parameters_.shift.value);
    if (spec_.learn_scale) {
        args[DNNL_ARG_SCALE] = memory_of(vec, parameters_.scale.value);
        args[DNNL_ARG_DIFF_SCALE] = memory_of(vec, parameters_.scale.grad);
    }
    if (fused_relu()) args[DNNL_ARG_WORKSPACE] = memory_of(workspace_);
    backward_.execute(stream(), args);
    input_ = {};
    workspace_ = {};
    return input_grad;
}

}  // namespace trellis::nn::cpu
