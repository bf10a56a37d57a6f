// SPDX-License-Identifier: Apache-2.0
// Batch normalisation over channels, optionally with the ReLU that follows it fused in (oneDNN
// then keeps a bit mask instead of a second activation), and without a learnt scale where the
// spec says (gamma is then 1: oneDNN normalises without one). Training uses the batch's
// statistics and updates running ones; evaluation uses the running ones. The batch's
// statistics are computed here in double (channel_statistics.hpp says why) and given to
// oneDNN's training primitive as its statistics; its backward pass still differentiates
// through them, as for statistics of its own.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/nn/cpu/channel_statistics.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class BatchNorm : public Layer {
public:
    explicit BatchNorm(const BatchNormSpec& spec);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override { parameters_.collect(store); }
    void initialize(std::mt19937_64&) override { parameters_.initialize(); }
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    void update_running_statistics();
    bool fused_relu() const { return spec_.relu && !separate_relu_; }
    void apply_relu(tensor::Tensor& output);

    BatchNormParameters parameters_;
    const BatchNormSpec& spec_;
    tensor::Shape shape_;
    std::int64_t reduced_count_ = 0;  // elements per channel in a batch

    // training_pd_ is the backward pass's hint (statistics of the batch); normalise_pd_ runs
    // the forward pass of training with ours.
    dnnl::batch_normalization_forward::primitive_desc training_pd_, normalise_pd_, inference_pd_;
    dnnl::batch_normalization_backward::primitive_desc backward_pd_;
    dnnl::batch_normalization_forward normalise_, inference_;
    dnnl::batch_normalization_backward backward_;

    // Where oneDNN has only reference kernels for the fused ReLU (under SSE41), the ReLU is a
    // primitive of its own after the normalisation (reference_kernels.hpp says why), and its
    // output is kept for its backward pass.
    bool separate_relu_ = false;
    dnnl::eltwise_forward::primitive_desc relu_pd_;
    dnnl::eltwise_backward::primitive_desc relu_backward_pd_;
    dnnl::eltwise_forward relu_;
    dnnl::eltwise_backward relu_backward_;

    tensor::Tensor input_, workspace_, output_;
    ChannelStatistics batch_;
};

}  // namespace trellis::nn::cpu
