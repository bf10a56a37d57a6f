// Max and average pooling (padding left out of the average's count) on cuDNN, and global
// average pooling (the head) on a kernel that also widens the activations to the f32 N x C
// matrix the fully connected layer reads.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/cuda_context.hpp"
#include "trainer/cuda/end_padding.hpp"

namespace trellis::nn::cuda {

class Pooling : public Layer {
public:
    Pooling(CudaContext& context, const PoolingSpec& spec);
    ~Pooling() override;

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    CudaContext& context_;
    PoolingSpec spec_;
    EndPadding end_padding_;
    tensor::Shape input_shape_, output_shape_;
    tensor::DType type_ = tensor::DType::f32;
    TensorDescriptor x_desc_, y_desc_;
    cudnnPoolingDescriptor_t pool_desc_ = nullptr;
    tensor::Tensor input_, output_;
};

class GlobalAveragePool : public Layer {
public:
    GlobalAveragePool(CudaContext& context, std::string name) : context_(context), name_(std::move(name)) {}

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    CudaContext& context_;
    std::string name_;
    tensor::Shape input_shape_;
    tensor::DType type_ = tensor::DType::f32;
};

}  // namespace trellis::nn::cuda
