// SPDX-License-Identifier: Apache-2.0
// Branch outputs side by side along the channels on oneDNN's concat, into plain NHWC memory:
// a branch's slice of it (and of the gradient) is then a view at any channel offset, which
// blocked layouts allow only at multiples of their block.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"

namespace trellis::nn::cpu {

class ChannelConcat : public nn::ChannelConcat {
public:
    explicit ChannelConcat(std::string name) : name_(std::move(name)) {}

    TensorSpec setup(const std::vector<TensorSpec>& branches) override;
    tensor::Tensor forward(const std::vector<tensor::Tensor>& branches) override;
    std::vector<tensor::Tensor> backward(const tensor::Tensor& output_grad) override;
    void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) override { add_into(target, addend); }

private:
    std::string name_;
    tensor::Shape shape_;
    memory::desc output_desc_;
    std::vector<memory::desc> branch_descs_;
    std::vector<tensor::Shape> branch_shapes_;
    std::vector<std::int64_t> offsets_;  // each branch's first channel
    dnnl::concat::primitive_desc concat_pd_;
    dnnl::concat concat_;
};

}  // namespace trellis::nn::cpu
