// SPDX-License-Identifier: Apache-2.0
// The oneDNN calls whose form differs between oneDNN 2 (Debian 12: 2.6) and oneDNN 3 (Debian
// 13: 3.7), written once. oneDNN 2 makes a primitive descriptor from an operation descriptor
// (convolution_forward::desc and the like); oneDNN 3 has no operation descriptors and takes the
// engine and the memory descriptors directly. oneDNN 3 also dropped memory::desc::data (its
// fields are queries), the scale of an eltwise post-op and pooling without dilation.
// With oneDNN 2 every function below makes exactly the calls the layers made before oneDNN 3
// was supported; the layers call only these.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>

namespace trellis::nn::cpu {

using dnnl::memory;

// Which implementation a convolution's primitive descriptor stops at: oneDNN's first choice,
// or the first that is not one of its reference kernels (skip_reference; is_reference on the
// result says whether one was left). With oneDNN 2 the operation descriptor must be alive
// while the implementations are walked, so that happens here, not on the result.
enum class Implementation { first, past_reference };

// A window's steps and padding per spatial dimension.
struct WindowSteps {
    memory::dims strides, padding_before, padding_after;
};

// Convolutions (direct). A zero `bias` (memory::desc()) means none.
dnnl::convolution_forward::primitive_desc convolution_forward_pd(const memory::desc& src, const memory::desc& weights,
                                                                 const memory::desc& bias, const memory::desc& dst,
                                                                 const WindowSteps& window,
                                                                 const dnnl::primitive_attr& attr,
                                                                 Implementation which = Implementation::first);
dnnl::convolution_backward_weights::primitive_desc convolution_backward_weights_pd(
    const memory::desc& src, const memory::desc& diff_weights, const memory::desc& diff_bias,
    const memory::desc& diff_dst, const WindowSteps& window, const dnnl::convolution_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr, Implementation which = Implementation::first);
dnnl::convolution_backward_data::primitive_desc convolution_backward_data_pd(
    const memory::desc& diff_src, const memory::desc& weights, const memory::desc& diff_dst, const WindowSteps& window,
    const dnnl::convolution_forward::primitive_desc& hint, const dnnl::primitive_attr& attr,
    Implementation which = Implementation::first);

// Pooling without dilation, training.
dnnl::pooling_forward::primitive_desc pooling_forward_pd(dnnl::algorithm algorithm, const memory::desc& src,
                                                         const memory::desc& dst, const memory::dims& kernel,
                                                         const WindowSteps& window, const dnnl::primitive_attr& attr);
dnnl::pooling_backward::primitive_desc pooling_backward_pd(dnnl::algorithm algorithm, const memory::desc& diff_src,
                                                           const memory::desc& diff_dst, const memory::dims& kernel,
                                                           const WindowSteps& window,
                                                           const dnnl::pooling_forward::primitive_desc& hint,
                                                           const dnnl::primitive_attr& attr);

// Batch normalisation in place of the data's layout (source and destination alike).
dnnl::batch_normalization_forward::primitive_desc batch_norm_forward_pd(dnnl::prop_kind prop, const memory::desc& data,
                                                                        float epsilon, dnnl::normalization_flags flags,
                                                                        const dnnl::primitive_attr& attr);
dnnl::batch_normalization_backward::primitive_desc batch_norm_backward_pd(
    const memory::desc& data, float epsilon, dnnl::normalization_flags flags,
    const dnnl::batch_normalization_forward::primitive_desc& hint, const dnnl::primitive_attr& attr);
// oneDNN 2's backward pass takes the shift (DNNL_ARG_SHIFT) with the other inputs; oneDNN 3's
// refuses to run when given it (it does not read it).
constexpr bool batch_norm_backward_takes_shift = DNNL_VERSION_MAJOR < 3;

// Element-wise operations (alpha and beta 0) for training, data and gradients in one layout.
dnnl::eltwise_forward::primitive_desc eltwise_forward_pd(dnnl::algorithm algorithm, const memory::desc& data,
                                                         const dnnl::primitive_attr& attr = dnnl::primitive_attr());
dnnl::eltwise_backward::primitive_desc eltwise_backward_pd(dnnl::algorithm algorithm, const memory::desc& data,
                                                           const dnnl::eltwise_forward::primitive_desc& hint,
                                                           const dnnl::primitive_attr& attr);

// Inner products (with a bias), training.
dnnl::inner_product_forward::primitive_desc inner_product_forward_pd(const memory::desc& src,
                                                                     const memory::desc& weights,
                                                                     const memory::desc& bias, const memory::desc& dst,
                                                                     const dnnl::primitive_attr& attr);
dnnl::inner_product_backward_weights::primitive_desc inner_product_backward_weights_pd(
    const memory::desc& src, const memory::desc& diff_weights, const memory::desc& diff_bias,
    const memory::desc& diff_dst, const dnnl::inner_product_forward::primitive_desc& hint,
    const dnnl::primitive_attr& attr);
dnnl::inner_product_backward_data::primitive_desc inner_product_backward_data_pd(
    const memory::desc& diff_src, const memory::desc& weights, const memory::desc& diff_dst,
    const dnnl::inner_product_forward::primitive_desc& hint, const dnnl::primitive_attr& attr);

dnnl::binary::primitive_desc binary_pd(dnnl::algorithm algorithm, const memory::desc& src0, const memory::desc& src1,
                                       const memory::desc& dst, const dnnl::primitive_attr& attr);
dnnl::concat::primitive_desc concat_pd(const memory::desc& dst, int dimension, const std::vector<memory::desc>& srcs,
                                       const dnnl::primitive_attr& attr);
// An element-wise post-op applied as is (scale 1 where oneDNN 2 has one).
void append_eltwise(dnnl::post_ops& ops, dnnl::algorithm algorithm, float alpha, float beta);

// What a memory descriptor says about its layout. The strides and inner blocks mean something
// only when `blocked`.
struct MemoryLayout {
    memory::data_type data_type;
    bool blocked;
    const char* format_kind;  // oneDNN's name for it
    memory::dims dims, strides, inner_blocks, inner_indices;
    memory::dim offset;  // elements before the first (a submemory's)
};
MemoryLayout layout_facts(const memory::desc& desc);

}  // namespace trellis::nn::cpu
