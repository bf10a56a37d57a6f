// SPDX-License-Identifier: Apache-2.0
// Batch norm on cuDNN's persistent NHWC kernels, with the following ReLU fused in training
// (cuDNN's BN_ACTIVATION ops) where cuDNN supports it for the type and shape. Where cuDNN
// refuses, the layer falls back once and remembers it: persistent without the fused ReLU,
// then the plain spatial kernels, the ReLU applied apart (by the module's kernel).
// As the last norm of a residual branch (`joined`), it also adds the shortcut before the ReLU:
// in the same cuDNN call (BN_ADD_ACTIVATION) where cuDNN takes it, otherwise by the module's
// add_relu kernel after the norm.
// Scale, shift and statistics stay f32 in every precision. Without a learnt scale, gamma is a
// device vector of ones and its gradient goes to a scratch vector.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class BatchNorm : public nn::Layer {
public:
    // `joined`: the last norm of a residual branch, run by forward_joined and backward_joined.
    BatchNorm(CudaContext& context, const nn::BatchNormSpec& spec, bool joined = false);
    ~BatchNorm() override;

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;
    void collect(nn::ParameterStore& store) override { parameters_.collect(store); }
    void initialize(std::mt19937_64&) override { parameters_.initialize(); }
    tensor::Tensor forward(const tensor::Tensor& input, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

    // y = relu(norm(input) + addend), the end of a residual block.
    tensor::Tensor forward_joined(const tensor::Tensor& input, const tensor::Tensor& addend, nn::Mode mode);
    // The gradients of the input and of the addend.
    nn::NormalizedJoin::Gradients backward_joined(const tensor::Tensor& output_grad);

private:
    // The cuDNN operations of the kernels in use.
    cudnnBatchNormOps_t ops() const;
    // One training forward with the current kernels (adding `addend` when the sum is fused);
    // cuDNN's status, not checked. A refusal of the matching backward counts as a refusal.
    cudnnStatus_t training_forward(const tensor::Tensor& input, const tensor::Tensor& addend,
                                   const tensor::Tensor& output, const void* scale);
    // Falls back to the next kernels of the chain; false when none is left.
    bool fall_back();
    tensor::Tensor train_forward(const tensor::Tensor& input, const tensor::Tensor& addend);
    tensor::Tensor inference(const tensor::Tensor& input);
    // Writes the input's gradient, and the addend's where the sum is fused; cuDNN's status,
    // not checked.
    cudnnStatus_t run_backward(const tensor::Tensor& norm_grad, const tensor::Tensor& input_grad,
                               const tensor::Tensor& addend_grad);
    // Lets go of what the forward pass kept for the backward pass.
    void forget();
    void apply_relu(const tensor::Tensor& output);

    CudaContext& context_;
    nn::BatchNormParameters parameters_;
    const std::string& name_;
    bool relu_;
    tensor::Tensor ones_, scale_grad_;  // gamma and its gradient without a learnt scale
    tensor::Shape shape_;
    tensor::DType type_ = tensor::DType::f32;
    TensorDescriptor data_desc_;
    cudnnTensorDescriptor_t channel_desc_ = nullptr;
    cudnnActivationDescriptor_t relu_desc_ = nullptr;
    // The kernels in use: the first of the fallback chain that cuDNN accepted.
    cudnnBatchNormMode_t mode_ = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
    bool fused_ = false;  // the ReLU inside cuDNN's batch norm
    bool joined_;
    bool fused_join_ = false;           // the addend and its ReLU inside cuDNN's batch norm
    bool fused_join_accepted_ = false;  // cuDNN took its backward pass's workspace query
    tensor::Tensor input_, output_, saved_mean_, saved_inverse_std_, reserve_;
};

}  // namespace trellis::cuda
