// SPDX-License-Identifier: Apache-2.0
// Max and average pooling (padding left out of the average's count) on cuDNN, and global
// average pooling (the head) on a kernel that also widens the activations to the f32 N x C
// matrix the fully connected layer reads.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/context.hpp"
#include "trainer/cuda/end_padding.hpp"

namespace trellis::cuda {

class Pooling : public nn::Layer {
public:
    Pooling(CudaContext& context, const nn::PoolingSpec& spec);
    ~Pooling() override;

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    CudaContext& context_;
    nn::PoolingSpec spec_;
    EndPadding end_padding_;
    tensor::Shape input_shape_, output_shape_;
    tensor::DType type_ = tensor::DType::f32;
    TensorDescriptor x_desc_, y_desc_;
    cudnnPoolingDescriptor_t pool_desc_ = nullptr;
    tensor::Tensor input_, output_;
};

class GlobalAveragePool : public nn::Layer {
public:
    GlobalAveragePool(CudaContext& context, std::string name) : context_(context), name_(std::move(name)) {}

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    CudaContext& context_;
    std::string name_;
    tensor::Shape input_shape_;
    tensor::DType type_ = tensor::DType::f32;
};

}  // namespace trellis::cuda
