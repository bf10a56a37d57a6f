// ReLU on its own, for the layers that have no batch norm to fuse it into (convolutions with
// a bias, fully connected layers), on oneDNN's eltwise primitives; backward reads the output.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

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
    dnnl::eltwise_backward::primitive_desc backward_pd_;
    dnnl::eltwise_forward forward_;
    dnnl::eltwise_backward backward_;
    tensor::Tensor output_;
};

}  // namespace trellis::nn::cpu
