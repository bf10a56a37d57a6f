// ReLU on its own and dropout, on the module's element-wise kernels. ReLU works in the
// activations' type; dropout on the f32 N x F matrices of the head (after a fully connected
// layer or the spatial mean), with the CPU's masks (nn/dropout_mask.hpp).
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/cuda_context.hpp"

namespace trellis::nn::cuda {

class Relu : public Layer {
public:
    Relu(CudaContext& context, std::string name) : context_(context), name_(std::move(name)) {}

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    CudaContext& context_;
    std::string name_;
    tensor::Shape shape_;
    tensor::DType type_ = tensor::DType::f32;
    tensor::Tensor output_;  // its backward reads the output
};

class Dropout : public Layer {
public:
    Dropout(CudaContext& context, std::string name, float keep, const DropoutDraw& draw);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    tensor::Tensor masked(const tensor::Tensor& in) const;

    CudaContext& context_;
    std::string name_;
    float keep_;
    const DropoutDraw& draw_;
    tensor::Shape shape_;
    std::uint64_t key_ = 0;  // the mask of the last training forward pass
};

}  // namespace trellis::nn::cuda
