// Batch norm on cuDNN's persistent NHWC kernels, with the following ReLU fused in training
// (cuDNN's BN_ACTIVATION ops) where cuDNN supports it for the type and shape. Where cuDNN
// refuses, the layer falls back once and remembers it: persistent without the fused ReLU,
// then the plain spatial kernels, the ReLU applied apart (by the module's kernel).
// Scale, shift and statistics stay f32 in every precision. Without a learnt scale, gamma is a
// device vector of ones and its gradient goes to a scratch vector.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/cuda/cuda_context.hpp"

namespace trellis::nn::cuda {

class BatchNorm : public Layer {
public:
    BatchNorm(CudaContext& context, const BatchNormSpec& spec);
    ~BatchNorm() override;

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override { parameters_.collect(store); }
    void initialize(std::mt19937_64&) override { parameters_.initialize(); }
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    // One training forward with the current kernels; cuDNN's status, not checked.
    cudnnStatus_t training_forward(const tensor::Tensor& input, const tensor::Tensor& output, const void* scale);
    void apply_relu(const tensor::Tensor& output);

    CudaContext& context_;
    BatchNormParameters parameters_;
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
    tensor::Tensor input_, output_, saved_mean_, saved_inverse_std_, reserve_;
};

}  // namespace trellis::nn::cuda
