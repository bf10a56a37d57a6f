// SPDX-License-Identifier: Apache-2.0
// The loss on the GPU (nn::DeviceLoss): the labels go up and the per-row losses and ranks come
// down through page-locked buffers, and an event marks the loss done, so that the host waits
// for the loss while the backward pass queued behind it runs on.
#pragma once

#include <vector>

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/context.hpp"

namespace trellis::cuda {

class CudaDeviceLoss : public nn::DeviceLoss {
public:
    explicit CudaDeviceLoss(CudaContext& context);
    ~CudaDeviceLoss() override;

    tensor::Tensor start(const tensor::Tensor& logits, std::span<const int> labels, int count,
                         const nn::SoftmaxCrossEntropy& loss, bool gradient) override;
    nn::LossResult finish() override;

private:
    void reserve(int rows);

    CudaContext& context_;
    int capacity_ = 0, rows_ = 0;
    int* host_labels_ = nullptr;  // page-locked
    float* host_losses_ = nullptr;
    int* host_higher_ = nullptr;
    std::shared_ptr<std::byte> device_buffer_;  // labels, losses, ranks
    cudaEvent_t done_ = nullptr;
};

}  // namespace trellis::cuda
