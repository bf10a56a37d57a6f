// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/cpu_backend.hpp"

#include <cstring>

#include "common/error.hpp"
#include "trainer/nn/cpu/batch_norm.hpp"
#include "trainer/nn/cpu/channel_concat.hpp"
#include "trainer/nn/cpu/convolution.hpp"
#include "trainer/nn/cpu/dropout.hpp"
#include "trainer/nn/cpu/linear.hpp"
#include "trainer/nn/cpu/pooling.hpp"
#include "trainer/nn/cpu/relu.hpp"
#include "trainer/nn/cpu/residual_join.hpp"

namespace trellis::nn::cpu {

LayerPtr CpuBackend::convolution(const ConvolutionSpec& spec) { return std::make_unique<Convolution>(spec); }

LayerPtr CpuBackend::batch_norm(const BatchNormSpec& spec) { return std::make_unique<BatchNorm>(spec); }

LayerPtr CpuBackend::pooling(const PoolingSpec& spec) {
    auto algorithm =
        spec.kind == PoolKind::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
    return std::make_unique<Pooling>(spec.name, algorithm, spec.window, false, false);
}

LayerPtr CpuBackend::global_average_pool(const std::string& name) {
    return std::make_unique<Pooling>(name, dnnl::algorithm::pooling_avg_exclude_padding, Window{}, true, true);
}

LayerPtr CpuBackend::linear(const LinearSpec& spec) { return std::make_unique<Linear>(spec); }

LayerPtr CpuBackend::relu(const std::string& name) { return std::make_unique<Relu>(name); }

LayerPtr CpuBackend::dropout(const std::string& name, float keep, const DropoutDraw& draw) {
    return std::make_unique<Dropout>(name, keep, draw);
}

std::unique_ptr<nn::ResidualJoin> CpuBackend::residual_join(const std::string& name) {
    return std::make_unique<ResidualJoin>(name);
}

std::unique_ptr<nn::ChannelConcat> CpuBackend::channel_concat(const std::string& name) {
    return std::make_unique<ChannelConcat>(name);
}

TensorSpec CpuBackend::nhwc_spec(const tensor::Shape& nchw_shape) {
    return spec_of(memory::desc(dims_of(nchw_shape), memory::data_type::f32, memory::format_tag::nhwc), nchw_shape);
}

std::vector<float> CpuBackend::to_plain(const tensor::Tensor& t) {
    auto plain = reordered(t, plain_desc(t.shape()));
    std::vector<float> values(static_cast<std::size_t>(t.shape().elements()));
    std::memcpy(values.data(), plain.data(), values.size() * sizeof(float));
    return values;
}

tensor::Tensor CpuBackend::from_plain(const std::vector<float>& values, const TensorSpec& spec) {
    if (static_cast<std::int64_t>(values.size()) != spec.shape.elements())
        throw UsageError("from_plain: " + std::to_string(values.size()) + " values for shape " + spec.shape.str());
    tensor::Tensor plain(spec.shape);
    std::memcpy(plain.data(), values.data(), values.size() * sizeof(float));
    return reordered(plain, desc_of(spec));
}

tensor::Tensor CpuBackend::stage_pixels(const PixelBytes& batch, const TensorSpec& spec) {
    if (static_cast<std::int64_t>(batch.values.size()) != spec.shape.elements())
        throw UsageError("stage_pixels: " + std::to_string(batch.values.size()) + " bytes for shape " +
                         spec.shape.str());
    // The bytes are N x H x W x C, the order of `spec` (the model's NHWC input).
    tensor::Tensor input(spec.shape, tensor::DType::f32, spec.layout);
    auto* out = reinterpret_cast<float*>(input.data());
    for (std::size_t i = 0; i < batch.values.size(); ++i) {
        auto c = i % 3;
        out[i] = float(batch.values[i]) * batch.gain[c] + batch.bias[c];
    }
    return input;
}

}  // namespace trellis::nn::cpu
