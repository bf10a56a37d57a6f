// SPDX-License-Identifier: Apache-2.0
// ReLU on its own, for the layers that have no batch norm to fuse it into (convolutions with
// a bias, fully connected layers), on oneDNN's eltwise primitives; backward reads the output.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

// ReLU's backward from its output (y > 0 exactly where the input was): Relu's, and the
// residual join's, whose ReLU is a post-op of its addition.
class ReluGradient {
public:
    void setup(const memory::desc& data, const tensor::Shape& shape);
    tensor::Tensor operator()(const tensor::Tensor& output, const tensor::Tensor& output_grad);

private:
    memory::desc data_;
    tensor::Shape shape_;
    dnnl::eltwise_backward::primitive_desc pd_;
    dnnl::eltwise_backward primitive_;
};

class Relu : public Layer {
public:
    explicit Relu(std::string name) : name_(std::move(name)) {}

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    std::string name_;
    tensor::Shape shape_;
    memory::desc data_;
    dnnl::eltwise_forward::primitive_desc forward_pd_;
    dnnl::eltwise_forward forward_;
    ReluGradient gradient_;
    tensor::Tensor output_;
};

}  // namespace trellis::nn::cpu
