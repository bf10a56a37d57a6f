// SPDX-License-Identifier: Apache-2.0
// The fully connected head on cuBLAS, in f32 (TF32 tensor cores where allowed): it is a small
// share of ResNet's work and keeps the logits and the loss in full precision.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/layer_parameters.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class Linear : public nn::Layer {
public:
    Linear(CudaContext& context, const nn::LinearSpec& spec);

    nn::TensorSpec setup(const nn::TensorSpec& input, bool input_grad) override;
    void collect(nn::ParameterStore& store) override;
    void initialize(std::mt19937_64& rng) override { parameters_.initialize(rng); }
    tensor::Tensor forward(const tensor::Tensor& input, nn::Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override { return parameters_.multiply_accumulates(batch_); }

private:
    tensor::Tensor widened(const tensor::Tensor& input) const;  // the input in f32, N x in

    CudaContext& context_;
    nn::LinearParameters parameters_;
    tensor::Shape image_shape_;  // an image input's shape; empty for a matrix input
    tensor::DType input_type_ = tensor::DType::f32;
    int batch_ = 0;
    bool input_grad_ = false;
    tensor::Tensor input_;
};

}  // namespace trellis::cuda
