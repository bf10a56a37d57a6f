// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/dnnl_version.hpp"

#include <oneapi/dnnl/dnnl_debug.h>

#include "trainer/nn/cpu/dnnl_context.hpp"
#include "trainer/nn/cpu/reference_kernels.hpp"

namespace trellis::nn::cpu {

namespace {
constexpr auto training = dnnl::prop_kind::forward_training;
constexpr auto direct = dnnl::algorithm::convolution_direct;

template <class PrimitiveDesc>
PrimitiveDesc chosen(PrimitiveDesc pd, Implementation which) {
    if (which == Implementation::past_reference) skip_reference(pd);
    return pd;
}
}  // namespace

#if DNNL_VERSION_MAJOR < 3

// oneDNN 2: operation descriptors, alive here while skip_reference walks the implementations.

dnnl::convolution_forward::primitive_desc convolution_forward_pd(const memory::desc& src, const memory::desc& weights,
                                                                 const memory::desc& bias, const memory::desc& dst,
                                                                 const WindowSteps& w, const dnnl::primitive_attr& attr,
                                                                 Implementation which) {
    using desc = dnnl::convolution_forward::desc;
    auto op = bias.is_zero()
                  ? desc{training, direct, src, weights, dst, w.strides, w.padding_before, w.padding_after}
                  : desc{training, direct, src, weights, bias, dst, w.strides, w.padding_before, w.padding_after};
    return chosen(dnnl::convolution_forward::primitive_desc{op, attr, engine()}, which);
}

dnnl::convolution_backward_weights::primitive_desc convolution_backward_weights_pd(
    const memory::desc& src, const memory::desc& diff_weights, const memory::desc& diff_bias,
    const memory::desc& diff_dst, const WindowSteps& w, const dnnl::convolution_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr, Implementation which) {
    using desc = dnnl::convolution_backward_weights::desc;
    auto op = diff_bias.is_zero()
                  ? desc{direct, src, diff_weights, diff_dst, w.strides, w.padding_before, w.padding_after}
                  : desc{direct, src, diff_weights, diff_bias, diff_dst, w.strides, w.padding_before, w.padding_after};
    return chosen(dnnl::convolution_backward_weights::primitive_desc{op, attr, engine(), hint}, which);
}

dnnl::convolution_backward_data::primitive_desc convolution_backward_data_pd(
    const memory::desc& diff_src, const memory::desc& weights, const memory::desc& diff_dst, const WindowSteps& w,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr, Implementation which) {
    dnnl::convolution_backward_data::desc op{direct,    diff_src,         weights,        diff_dst,
                                             w.strides, w.padding_before, w.padding_after};
    return chosen(dnnl::convolution_backward_data::primitive_desc{op, attr, engine(), hint}, which);
}

dnnl::pooling_forward::primitive_desc pooling_forward_pd(dnnl::algorithm algorithm, const memory::desc& src,
                                                         const memory::desc& dst, const memory::dims& kernel,
                                                         const WindowSteps& w, const dnnl::primitive_attr& attr) {
    return {{training, algorithm, src, dst, w.strides, kernel, w.padding_before, w.padding_after}, attr, engine()};
}

dnnl::pooling_backward::primitive_desc pooling_backward_pd(dnnl::algorithm algorithm, const memory::desc& diff_src,
                                                           const memory::desc& diff_dst, const memory::dims& kernel,
                                                           const WindowSteps& w,
                                                           const dnnl::pooling_forward::primitive_desc& hint,
                                                           const dnnl::primitive_attr& attr) {
    return {
        {algorithm, diff_src, diff_dst, w.strides, kernel, w.padding_before, w.padding_after}, attr, engine(), hint};
}

dnnl::batch_normalization_forward::primitive_desc batch_norm_forward_pd(dnnl::prop_kind prop, const memory::desc& data,
                                                                        float epsilon, dnnl::normalization_flags flags,
                                                                        const dnnl::primitive_attr& attr) {
    return {{prop, data, epsilon, flags}, attr, engine()};
}

dnnl::batch_normalization_backward::primitive_desc batch_norm_backward_pd(
    const memory::desc& data, float epsilon, dnnl::normalization_flags flags,
    const dnnl::batch_normalization_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
    return {{dnnl::prop_kind::backward, data, data, epsilon, flags}, attr, engine(), hint};
}

dnnl::eltwise_forward::primitive_desc eltwise_forward_pd(dnnl::algorithm algorithm, const memory::desc& data,
                                                         const dnnl::primitive_attr& attr) {
    return {{training, algorithm, data, 0.0f, 0.0f}, attr, engine()};
}

dnnl::eltwise_backward::primitive_desc eltwise_backward_pd(dnnl::algorithm algorithm, const memory::desc& data,
                                                           const dnnl::eltwise_forward::primitive_desc& hint,
                                                           const dnnl::primitive_attr& attr) {
    return {{algorithm, data, data, 0.0f, 0.0f}, attr, engine(), hint};
}

dnnl::inner_product_forward::primitive_desc inner_product_forward_pd(const memory::desc& src,
                                                                     const memory::desc& weights,
                                                                     const memory::desc& bias, const memory::desc& dst,
                                                                     const dnnl::primitive_attr& attr) {
    return {{training, src, weights, bias, dst}, attr, engine()};
}

dnnl::inner_product_backward_weights::primitive_desc inner_product_backward_weights_pd(
    const memory::desc& src, const memory::desc& diff_weights, const memory::desc& diff_bias,
    const memory::desc& diff_dst, const dnnl::inner_product_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
    return {{src, diff_weights, diff_bias, diff_dst}, attr, engine(), hint};
}

dnnl::inner_product_backward_data::primitive_desc inner_product_backward_data_pd(
    const memory::desc& diff_src, const memory::desc& weights, const memory::desc& diff_dst,
    const dnnl::inner_product_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
    return {{diff_src, weights, diff_dst}, attr, engine(), hint};
}

dnnl::binary::primitive_desc binary_pd(dnnl::algorithm algorithm, const memory::desc& src0, const memory::desc& src1,
                                       const memory::desc& dst, const dnnl::primitive_attr& attr) {
    return {{algorithm, src0, src1, dst}, attr, engine()};
}

dnnl::concat::primitive_desc concat_pd(const memory::desc& dst, int dimension, const std::vector<memory::desc>& srcs,
                                       const dnnl::primitive_attr& attr) {
    return {dst, dimension, srcs, engine(), attr};
}

void append_eltwise(dnnl::post_ops& ops, dnnl::algorithm algorithm, float alpha, float beta) {
    ops.append_eltwise(1.0f, algorithm, alpha, beta);
}

MemoryLayout layout_facts(const memory::desc& desc) {
    const auto& md = desc.data;
    const auto& blocking = md.format_desc.blocking;
    MemoryLayout facts{memory::data_type(md.data_type),
                       md.format_kind == dnnl_blocked,
                       dnnl_fmt_kind2str(md.format_kind),
                       memory::dims(md.dims, md.dims + md.ndims),
                       {},
                       {},
                       {},
                       md.offset0};
    if (facts.blocked) {
        facts.strides.assign(blocking.strides, blocking.strides + md.ndims);
        facts.inner_blocks.assign(blocking.inner_blks, blocking.inner_blks + blocking.inner_nblks);
        facts.inner_indices.assign(blocking.inner_idxs, blocking.inner_idxs + blocking.inner_nblks);
    }
    return facts;
}

#else

// oneDNN 3: primitive descriptors straight from the engine and the memory descriptors.

dnnl::convolution_forward::primitive_desc convolution_forward_pd(const memory::desc& src, const memory::desc& weights,
                                                                 const memory::desc& bias, const memory::desc& dst,
                                                                 const WindowSteps& w, const dnnl::primitive_attr& attr,
                                                                 Implementation which) {
    return chosen(dnnl::convolution_forward::primitive_desc{engine(), training, direct, src, weights, bias, dst,
                                                            w.strides, w.padding_before, w.padding_after, attr},
                  which);
}

dnnl::convolution_backward_weights::primitive_desc convolution_backward_weights_pd(
    const memory::desc& src, const memory::desc& diff_weights, const memory::desc& diff_bias,
    const memory::desc& diff_dst, const WindowSteps& w, const dnnl::convolution_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr, Implementation which) {
    return chosen(
        dnnl::convolution_backward_weights::primitive_desc{engine(), direct, src, diff_weights, diff_bias, diff_dst,
                                                           w.strides, w.padding_before, w.padding_after, hint, attr},
        which);
}

dnnl::convolution_backward_data::primitive_desc convolution_backward_data_pd(
    const memory::desc& diff_src, const memory::desc& weights, const memory::desc& diff_dst, const WindowSteps& w,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr, Implementation which) {
    return chosen(
        dnnl::convolution_backward_data::primitive_desc{engine(), direct, diff_src, weights, diff_dst, w.strides,
                                                        w.padding_before, w.padding_after, hint, attr},
        which);
}

dnnl::pooling_forward::primitive_desc pooling_forward_pd(dnnl::algorithm algorithm, const memory::desc& src,
                                                         const memory::desc& dst, const memory::dims& kernel,
                                                         const WindowSteps& w, const dnnl::primitive_attr& attr) {
    memory::dims no_dilation(kernel.size(), 0);
    return {engine(),    training,         algorithm,       src, dst, w.strides, kernel,
            no_dilation, w.padding_before, w.padding_after, attr};
}

dnnl::pooling_backward::primitive_desc pooling_backward_pd(dnnl::algorithm algorithm, const memory::desc& diff_src,
                                                           const memory::desc& diff_dst, const memory::dims& kernel,
                                                           const WindowSteps& w,
                                                           const dnnl::pooling_forward::primitive_desc& hint,
                                                           const dnnl::primitive_attr& attr) {
    memory::dims no_dilation(kernel.size(), 0);
    return {engine(),    algorithm,        diff_src,        diff_dst, w.strides, kernel,
            no_dilation, w.padding_before, w.padding_after, hint,     attr};
}

dnnl::batch_normalization_forward::primitive_desc batch_norm_forward_pd(dnnl::prop_kind prop, const memory::desc& data,
                                                                        float epsilon, dnnl::normalization_flags flags,
                                                                        const dnnl::primitive_attr& attr) {
    return {engine(), prop, data, data, epsilon, flags, attr};
}

dnnl::batch_normalization_backward::primitive_desc batch_norm_backward_pd(
    const memory::desc& data, float epsilon, dnnl::normalization_flags flags,
    const dnnl::batch_normalization_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
    return {engine(), dnnl::prop_kind::backward, data, data, data, epsilon, flags, hint, attr};
}

dnnl::eltwise_forward::primitive_desc eltwise_forward_pd(dnnl::algorithm algorithm, const memory::desc& data,
                                                         const dnnl::primitive_attr& attr) {
    return {engine(), training, algorithm, data, data, 0.0f, 0.0f, attr};
}

dnnl::eltwise_backward::primitive_desc eltwise_backward_pd(dnnl::algorithm algorithm, const memory::desc& data,
                                                           const dnnl::eltwise_forward::primitive_desc& hint,
                                                           const dnnl::primitive_attr& attr) {
    return {engine(), algorithm, data, data, data, 0.0f, 0.0f, hint, attr};
}

dnnl::inner_product_forward::primitive_desc inner_product_forward_pd(const memory::desc& src,
                                                                     const memory::desc& weights,
                                                                     const memory::desc& bias, const memory::desc& dst,
                                                                     const dnnl::primitive_attr& attr) {
    return {engine(), training, src, weights, bias, dst, attr};
}

dnnl::inner_product_backward_weights::primitive_desc inner_product_backward_weights_pd(
    const memory::desc& src, const memory::desc& diff_weights, const memory::desc& diff_bias,
    const memory::desc& diff_dst, const dnnl::inner_product_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr) {
    return {engine(), src, diff_weights, diff_bias, diff_dst, hint, attr};
}

dnnl::inner_product_backward_data::primitive_desc inner_product_backward_data_pd(
    const memory::desc& diff_src, const memory::desc& weights, const memory::desc& diff_dst,
    const dnnl::inner_product_forward::primitive_desc& hint, const dnnl::primitive_attr& attr) {
    return {engine(), diff_src, weights, diff_dst, hint, attr};
}

dnnl::binary::primitive_desc binary_pd(dnnl::algorithm algorithm, const memory::desc& src0, const memory::desc& src1,
                                       const memory::desc& dst, const dnnl::primitive_attr& attr) {
    return {engine(), algorithm, src0, src1, dst, attr};
}

dnnl::concat::primitive_desc concat_pd(const memory::desc& dst, int dimension, const std::vector<memory::desc>& srcs,
                                       const dnnl::primitive_attr& attr) {
    return {engine(), dst, dimension, srcs, attr};
}

void append_eltwise(dnnl::post_ops& ops, dnnl::algorithm algorithm, float alpha, float beta) {
    ops.append_eltwise(algorithm, alpha, beta);
}

MemoryLayout layout_facts(const memory::desc& desc) {
    auto kind = desc.get_format_kind();
    MemoryLayout facts{desc.get_data_type(),
                       kind == memory::format_kind::blocked,
                       dnnl_fmt_kind2str(static_cast<dnnl_format_kind_t>(kind)),
                       desc.get_dims(),
                       {},
                       {},
                       {},
                       desc.get_submemory_offset()};
    if (facts.blocked) {
        facts.strides = desc.get_strides();
        facts.inner_blocks = desc.get_inner_blks();
        facts.inner_indices = desc.get_inner_idxs();
    }
    return facts;
}

#endif

}  // namespace trellis::nn::cpu
