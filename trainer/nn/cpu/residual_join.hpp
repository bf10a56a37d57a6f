// SPDX-License-Identifier: Apache-2.0
// The end of a residual block: y = relu(a + b) as one oneDNN binary primitive with a ReLU
// post-op; backward uses y itself (ReLU's gradient only needs where y > 0).
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"
#include "trainer/nn/cpu/relu.hpp"

namespace trellis::nn::cpu {

class ResidualJoin : public nn::ResidualJoin {
public:
    explicit ResidualJoin(std::string name) : name_(std::move(name)) {}

    TensorSpec setup(const TensorSpec& a, const TensorSpec& b) override;
    tensor::Tensor forward(const tensor::Tensor& a, const tensor::Tensor& b, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) override { add_into(target, addend); }

private:
    std::string name_;
    tensor::Shape shape_;
    memory::desc data_;
    dnnl::binary::primitive_desc add_relu_pd_;
    dnnl::binary add_relu_;
    ReluGradient relu_gradient_;
    tensor::Tensor output_;
};

}  // namespace trellis::nn::cpu
