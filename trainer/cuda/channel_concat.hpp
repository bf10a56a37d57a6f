// SPDX-License-Identifier: Apache-2.0
// Branch outputs side by side along the channels. Activations are N x H x W x C on the GPU, so
// a branch's channels are a strided block of the output: one 2-D copy per branch each way.
#pragma once

#include <vector>

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class ChannelConcat : public nn::ChannelConcat {
public:
    ChannelConcat(CudaContext& context, std::string name) : context_(context), name_(std::move(name)) {}

    nn::TensorSpec setup(const std::vector<nn::TensorSpec>& branches) override;
    tensor::Tensor forward(const std::vector<tensor::Tensor>& branches) override;
    std::vector<tensor::Tensor> backward(const tensor::Tensor& output_grad) override;
    void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) override;

private:
    // Copies `channels` wide rows between a tensor of `from_width` channels and one of
    // `to_width`, at channel offsets `from_first` and `to_first`.
    void copy_rows(const void* from, std::int64_t from_width, std::int64_t from_first, void* to, std::int64_t to_width,
                   std::int64_t to_first, std::int64_t channels) const;

    CudaContext& context_;
    std::string name_;
    tensor::Shape shape_;
    tensor::DType type_ = tensor::DType::f32;
    std::vector<tensor::Shape> branch_shapes_;
    std::vector<std::int64_t> offsets_;  // each branch's first channel
};

}  // namespace trellis::cuda
