// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/channel_concat.hpp"

#include "common/error.hpp"
#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

TensorSpec ChannelConcat::setup(const std::vector<TensorSpec>& branches) {
    const auto& first = branches.front().shape;
    std::int64_t channels = 0;
    branch_descs_.clear(), branch_shapes_.clear(), offsets_.clear();
    for (const auto& branch : branches) {
        const auto& s = branch.shape;
        if (s.rank() != 4 || s[0] != first[0] || s[2] != first[2] || s[3] != first[3])
            throw UsageError(name_ + ": branches must agree on N, H and W to be concatenated, got " + first.str() +
                             " and " + s.str());
        offsets_.push_back(channels);
        channels += s[1];
        branch_descs_.push_back(desc_of(branch));
        branch_shapes_.push_back(s);
    }
    shape_ = tensor::Shape{first[0], channels, first[2], first[3]};
    output_desc_ = memory::desc(dims_of(shape_), memory::data_type::f32, memory::format_tag::nhwc);
    concat_pd_ = concat_pd(output_desc_, 1, branch_descs_, attributes());
    concat_ = dnnl::concat(concat_pd_);
    return spec_of(output_desc_, shape_);
}

tensor::Tensor ChannelConcat::forward(const std::vector<tensor::Tensor>& branches) {
    std::vector<tensor::Tensor> inputs;  // kept alive until the primitive has run
    std::unordered_map<int, memory> args;
    for (std::size_t i = 0; i < branches.size(); ++i) {
        inputs.push_back(reordered(branches[i], branch_descs_[i]));
        args[DNNL_ARG_MULTIPLE_SRC + int(i)] = memory_of(inputs.back());
    }
    auto output = allocate(output_desc_, shape_);
    args[DNNL_ARG_DST] = memory_of(output);
    args[DNNL_ARG_SCRATCHPAD] = scratchpad(concat_pd_.scratchpad_desc());
    concat_.execute(stream(), args);
    return output;
}

std::vector<tensor::Tensor> ChannelConcat::backward(const tensor::Tensor& output_grad) {
    auto grad = reordered(output_grad, output_desc_);
    auto whole = memory_of(grad);
    std::vector<tensor::Tensor> grads;
    for (std::size_t i = 0; i < branch_shapes_.size(); ++i) {
        const auto& s = branch_shapes_[i];
        auto part = output_desc_.submemory_desc(dims_of(s), {0, offsets_[i], 0, 0});
        grads.push_back(allocate(branch_descs_[i], s));
        reorder_into(memory_of(part, grad.data()), memory_of(grads.back()));
    }
    return grads;
}

}  // namespace trellis::nn::cpu
