// SPDX-License-Identifier: Apache-2.0
// The CPU backend: every layer on oneDNN primitives.
#pragma once

#include "trainer/nn/backend.hpp"

namespace trellis::nn::cpu {

class CpuBackend : public Backend {
public:
    std::string name() const override { return "cpu"; }
    LayerPtr convolution(const ConvolutionSpec& spec) override;
    LayerPtr batch_norm(const BatchNormSpec& spec) override;
    LayerPtr pooling(const PoolingSpec& spec) override;
    LayerPtr global_average_pool(const std::string& name) override;
    LayerPtr linear(const LinearSpec& spec) override;
    LayerPtr relu(const std::string& name) override;
    LayerPtr dropout(const std::string& name, float keep, const DropoutDraw& draw) override;
    std::unique_ptr<nn::ResidualJoin> residual_join(const std::string& name) override;
    std::unique_ptr<nn::ChannelConcat> channel_concat(const std::string& name) override;
    TensorSpec nhwc_spec(const tensor::Shape& nchw_shape) override;
    std::vector<float> to_plain(const tensor::Tensor& t) override;
    tensor::Tensor from_plain(const std::vector<float>& values, const TensorSpec& spec) override;
    tensor::Tensor stage_pixels(const PixelBytes& batch, const TensorSpec& spec) override;
};

}  // namespace trellis::nn::cpu
