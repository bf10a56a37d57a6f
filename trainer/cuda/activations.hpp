// SPDX-License-Identifier: Apache-2.0
// ReLU on its own and dropout, on the module's element-wise kernels. ReLU works in the
// activations' type; dropout on the f32 N x F matrices of the head (after a fully connected
// layer or the spatial mean), with the CPU's masks (nn/dropout_mask.hpp).
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/dropout.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class Relu : public nn::Layer {
public:
    Relu(CudaContext& context, std::string name) : context_(context), name_(std::move(name)) {}

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    CudaContext& context_;
    std::string name_;
    tensor::Shape shape_;
    tensor::DType type_ = tensor::DType::f32;
    tensor::Tensor output_;  // its backward reads the output
};

// On the f32 N x F matrices of the head (nn/dropout.hpp has the rest).
class Dropout : public nn::Dropout {
public:
    Dropout(CudaContext& context, std::string name, float keep, const nn::DropoutDraw& draw)
        : nn::Dropout(std::move(name), keep, draw), context_(context) {}

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;

protected:
    tensor::Tensor masked(const tensor::Tensor& in, std::uint64_t key, std::uint64_t threshold,
                          float scale) const override;

private:
    CudaContext& context_;
};

}  // namespace trellis::cuda
