// SPDX-License-Identifier: Apache-2.0
// The CUDA backend: every layer on cuDNN, cuBLAS or the module's kernels, activations NHWC in
// the compute precision, the head and the loss in f32.
#pragma once

#include <memory>

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/context.hpp"
#include "trainer/cuda/device_loss.hpp"

namespace trellis::cuda {

class CudaBackend : public nn::Backend {
public:
    explicit CudaBackend(CudaContext& context);
    ~CudaBackend() override;

    std::string name() const override { return "cuda"; }
    nn::LayerPtr convolution(const nn::ConvolutionSpec& spec) override;
    nn::LayerPtr batch_norm(const nn::BatchNormSpec& spec) override;
    nn::LayerPtr pooling(const nn::PoolingSpec& spec) override;
    nn::LayerPtr global_average_pool(const std::string& name) override;
    nn::LayerPtr linear(const nn::LinearSpec& spec) override;
    nn::LayerPtr relu(const std::string& name) override;
    nn::LayerPtr dropout(const std::string& name, float keep, const nn::DropoutDraw& draw) override;
    std::unique_ptr<nn::ResidualJoin> residual_join(const std::string& name) override;
    std::unique_ptr<nn::NormalizedJoin> normalized_join(const nn::BatchNormSpec& norm,
                                                        const std::string& name) override;
    std::unique_ptr<nn::ChannelConcat> channel_concat(const std::string& name) override;
    nn::TensorSpec nhwc_spec(const tensor::Shape& nchw_shape) override;
    std::vector<float> to_plain(const tensor::Tensor& t) override;
    tensor::Tensor from_plain(const std::vector<float>& values, const nn::TensorSpec& spec) override;
    tensor::Tensor stage_input(const tensor::Tensor& host_batch) override;
    tensor::Tensor stage_pixels(const nn::PixelBytes& batch, const nn::TensorSpec& spec) override;
    float gradient_scale() const override { return context_.loss_scale; }
    nn::DeviceLoss* device_loss() override { return &loss_; }

private:
    int stage_copy(const void* host, std::size_t bytes);

    CudaContext& context_;
    CudaDeviceLoss loss_;
    // Input batches go through page-locked memory and their own stream, so that the copy
    // runs while the previous step still computes. Two buffers alternate, as large as the
    // largest batch so far (float batches, or bytes).
    cudaStream_t copy_stream_ = nullptr;
    cudaEvent_t copied_[2] = {nullptr, nullptr};
    cudaEvent_t consumed_[2] = {nullptr, nullptr};
    void* pinned_[2] = {nullptr, nullptr};
    std::shared_ptr<std::byte> staged_[2];
    std::size_t staged_bytes_ = 0;
    int next_ = 0;
};

}  // namespace trellis::cuda
