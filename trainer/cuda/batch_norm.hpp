// Batch norm on cuDNN's persistent NHWC kernels, with the following ReLU fused in training
// (cuDNN's BN_ACTIVATION ops) where cuDNN supports it for the type, else cuDNN's ReLU after it.
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
    bool fused_ = false;  // the ReLU inside cuDNN's batch norm; off where cuDNN refuses it
    tensor::Tensor input_, output_, saved_mean_, saved_inverse_std_, reserve_;
};

}  // namespace trellis::nn::cuda
