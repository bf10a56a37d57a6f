// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/dnnl_context.hpp"

#include <mutex>

#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

std::string DnnlLayout::name() const {
    // Strides of the outer dimensions, then the inner blocks (16c for nChw16c).
    auto facts = layout_facts(desc);
    if (!facts.blocked) return facts.format_kind;
    std::string text = "strides";
    for (std::size_t i = 0; i < facts.strides.size(); ++i) text += (i ? "," : ":") + std::to_string(facts.strides[i]);
    for (std::size_t i = 0; i < facts.inner_blocks.size(); ++i)
        text += " " + std::to_string(facts.inner_blocks[i]) + "abcdef"[facts.inner_indices[i]];
    return text;
}

dnnl::engine& engine() {
    static dnnl::engine cpu_engine(dnnl::engine::kind::cpu, 0);
    return cpu_engine;
}

dnnl::stream& stream() {
    static dnnl::stream cpu_stream(engine());
    return cpu_stream;
}

dnnl::primitive_attr attributes() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

memory scratchpad(const memory::desc& wanted) {
    // Grows to the largest request; primitives run one after another on one stream.
    static std::shared_ptr<std::byte> buffer;
    static std::size_t size = 0;
    if (wanted.get_size() > size) {
        size = wanted.get_size();
        buffer = tensor::Tensor(tensor::Shape{static_cast<std::int64_t>(size)}, tensor::DType::f32,
                                std::make_shared<DnnlLayout>(wanted))
                     .memory();
    }
    return memory(wanted, engine(), buffer.get());
}

memory::dims dims_of(const tensor::Shape& shape) { return memory::dims(shape.dims().begin(), shape.dims().end()); }

memory::desc plain_desc(const tensor::Shape& shape) {
    auto dims = dims_of(shape);
    memory::dims strides(dims.size(), 1);
    for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
    return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc desc_of(const tensor::Tensor& t) {
    if (auto* layout = dynamic_cast<const DnnlLayout*>(t.layout().get())) return layout->desc;
    return plain_desc(t.shape());
}

memory::desc desc_of(const TensorSpec& spec) {
    if (auto* layout = dynamic_cast<const DnnlLayout*>(spec.layout.get())) return layout->desc;
    return plain_desc(spec.shape);
}

std::shared_ptr<const tensor::Layout> layout_of(const memory::desc& desc) { return std::make_shared<DnnlLayout>(desc); }

TensorSpec spec_of(const memory::desc& desc, const tensor::Shape& shape) { return {shape, layout_of(desc)}; }

memory memory_of(const memory::desc& desc, void* data) { return memory(desc, engine(), data); }
memory memory_of(const tensor::Tensor& t) { return memory_of(desc_of(t), t.data()); }

tensor::Tensor allocate(const memory::desc& desc, const tensor::Shape& shape) {
    return tensor::Tensor(shape, tensor::DType::f32, layout_of(desc));
}

void reorder_into(const memory& from, const memory& to) {
    dnnl::reorder(from, to).execute(stream(), const_cast<memory&>(from), const_cast<memory&>(to));
}

tensor::Tensor reordered(const tensor::Tensor& t, const memory::desc& desc) {
    if (desc_of(t) == desc) return t;
    auto copy = allocate(desc, t.shape());
    reorder_into(memory_of(t), memory_of(copy));
    return copy;
}

void add_into(tensor::Tensor& target, const tensor::Tensor& addend) {
    auto target_desc = desc_of(target);
    auto source = reordered(addend, target_desc);
    auto pd = binary_pd(dnnl::algorithm::binary_add, target_desc, target_desc, target_desc, attributes());
    auto target_memory = memory_of(target);
    dnnl::binary(pd).execute(stream(), {{DNNL_ARG_SRC_0, target_memory},
                                        {DNNL_ARG_SRC_1, memory_of(source)},
                                        {DNNL_ARG_DST, target_memory},
                                        {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
}

}  // namespace trellis::nn::cpu
