// SPDX-License-Identifier: Apache-2.0
// oneDNN's engine and stream for the CPU backend, the layout type it stores in tensors, and
// the conversions at the edges (plain <-> the formats oneDNN picks).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/nn/layer.hpp"

namespace trellis::nn::cpu {

using dnnl::memory;

// A tensor's physical layout as oneDNN describes it.
class DnnlLayout : public tensor::Layout {
public:
    explicit DnnlLayout(memory::desc desc) : desc(std::move(desc)) {}
    std::size_t bytes() const override { return desc.get_size(); }
    std::string name() const override;

    const memory::desc desc;
};

dnnl::engine& engine();
dnnl::stream& stream();

// Primitive attributes every layer uses: the scratchpad is ours, shared by all primitives,
// since they run one at a time.
dnnl::primitive_attr attributes();
memory scratchpad(const memory::desc& wanted);

memory::dims dims_of(const tensor::Shape& shape);
// The descriptor of a tensor: its layout's, or plain row-major for the shape.
memory::desc desc_of(const tensor::Tensor& t);
memory::desc desc_of(const TensorSpec& spec);
memory::desc plain_desc(const tensor::Shape& shape);
TensorSpec spec_of(const memory::desc& desc, const tensor::Shape& shape);
std::shared_ptr<const tensor::Layout> layout_of(const memory::desc& desc);

memory memory_of(const tensor::Tensor& t);
memory memory_of(const memory::desc& desc, void* data);

// A new tensor (from the host pool) in `desc`'s layout.
tensor::Tensor allocate(const memory::desc& desc, const tensor::Shape& shape);
// `t` itself when it already has layout `desc`, else a reordered copy.
tensor::Tensor reordered(const tensor::Tensor& t, const memory::desc& desc);
void reorder_into(const memory& from, const memory& to);
// target += addend, converting the addend's layout when it differs.
void add_into(tensor::Tensor& target, const tensor::Tensor& addend);

}  // namespace trellis::nn::cpu
