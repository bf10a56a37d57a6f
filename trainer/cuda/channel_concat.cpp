// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/channel_concat.hpp"

#include "common/error.hpp"
#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

nn::TensorSpec ChannelConcat::setup(const std::vector<nn::TensorSpec>& branches) {
    const auto& first = branches.front().shape;
    type_ = type_of(branches.front());
    std::int64_t channels = 0;
    branch_shapes_.clear(), offsets_.clear();
    for (const auto& branch : branches) {
        const auto& s = branch.shape;
        if (s.rank() != 4 || s[0] != first[0] || s[2] != first[2] || s[3] != first[3] || type_of(branch) != type_)
            throw UsageError(name_ + ": branches must agree on N, H, W and the element type to be concatenated, got " +
                             first.str() + " and " + s.str());
        offsets_.push_back(channels);
        channels += s[1];
        branch_shapes_.push_back(s);
    }
    shape_ = tensor::Shape{first[0], channels, first[2], first[3]};
    return context_.spec(shape_, type_);
}

void ChannelConcat::copy_rows(const void* from, std::int64_t from_width, std::int64_t from_first, void* to,
                              std::int64_t to_width, std::int64_t to_first, std::int64_t channels) const {
    std::size_t element = tensor::element_size(type_);
    std::size_t rows = std::size_t(shape_[0] * shape_[2] * shape_[3]);
    check(cudaMemcpy2DAsync(static_cast<std::byte*>(to) + std::size_t(to_first) * element,
                            std::size_t(to_width) * element,
                            static_cast<const std::byte*>(from) + std::size_t(from_first) * element,
                            std::size_t(from_width) * element, std::size_t(channels) * element, rows,
                            cudaMemcpyDeviceToDevice, context_.stream()),
          name_ + ": copying a branch's channels");
}

tensor::Tensor ChannelConcat::forward(const std::vector<tensor::Tensor>& branches) {
    auto timed = context_.profile().time("concatenation", context_.stream());
    auto output = context_.allocate(shape_, type_);
    for (std::size_t i = 0; i < branches.size(); ++i) {
        auto width = branch_shapes_[i][1];
        copy_rows(branches[i].data(), width, 0, output.data(), shape_[1], offsets_[i], width);
    }
    return output;
}

std::vector<tensor::Tensor> ChannelConcat::backward(const tensor::Tensor& output_grad) {
    std::vector<tensor::Tensor> grads;
    for (std::size_t i = 0; i < branch_shapes_.size(); ++i) {
        auto width = branch_shapes_[i][1];
        grads.push_back(context_.allocate(branch_shapes_[i], type_));
        copy_rows(output_grad.data(), shape_[1], offsets_[i], grads.back().data(), width, 0, width);
    }
    return grads;
}

void ChannelConcat::accumulate(tensor::Tensor& target, const tensor::Tensor& addend) {
    kernels::accumulate(target.data(), addend.data(), type_, std::size_t(target.shape().elements()), context_.stream());
}

}  // namespace trellis::cuda
