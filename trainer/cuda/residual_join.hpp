// SPDX-License-Identifier: Apache-2.0
// y = relu(a + b) at the end of a residual block, on the GPU's element-wise kernels.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class ResidualJoin : public nn::ResidualJoin {
public:
    ResidualJoin(CudaContext& context, std::string name) : context_(context), name_(std::move(name)) {}

    nn::TensorSpec setup(const nn::TensorSpec& a, const nn::TensorSpec& b) override;
    tensor::Tensor forward(const tensor::Tensor& a, const tensor::Tensor& b, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) override;

private:
    CudaContext& context_;
    std::string name_;
    tensor::Shape shape_;
    tensor::DType type_ = tensor::DType::f32;
    tensor::Tensor output_;
};

}  // namespace trellis::cuda
