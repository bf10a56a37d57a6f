// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/device_loss.hpp"

#include <cstring>
#include <string>

#include "trainer/cuda/check.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

CudaDeviceLoss::CudaDeviceLoss(CudaContext& context) : context_(context) {
    check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate");
}

CudaDeviceLoss::~CudaDeviceLoss() {
    cudaEventSynchronize(done_);
    cudaEventDestroy(done_);
    for (void* p :
         {static_cast<void*>(host_labels_), static_cast<void*>(host_losses_), static_cast<void*>(host_higher_)})
        if (p) cudaFreeHost(p);
}

void CudaDeviceLoss::reserve(int rows) {
    if (rows <= capacity_) return;
    cudaEventSynchronize(done_);
    for (void** p : {reinterpret_cast<void**>(&host_labels_), reinterpret_cast<void**>(&host_losses_),
                     reinterpret_cast<void**>(&host_higher_)}) {
        if (*p) cudaFreeHost(*p);
        check(cudaMallocHost(p, std::size_t(rows) * 4), "cudaMallocHost (loss buffers)");
    }
    device_buffer_ = context_.pool().acquire(std::size_t(rows) * 12);
    capacity_ = rows;
}

tensor::Tensor CudaDeviceLoss::start(const tensor::Tensor& logits, std::span<const int> labels, int count,
                                     const nn::SoftmaxCrossEntropy& loss, bool gradient) {
    auto timed = context_.profile().time("loss", context_.stream());
    const int classes = int(logits.shape()[1]);
    for (int r = 0; r < count; ++r)
        if (labels[std::size_t(r)] < 0 || labels[std::size_t(r)] >= classes)
            throw std::out_of_range("label " + std::to_string(labels[std::size_t(r)]) + " outside [0, " +
                                    std::to_string(classes) + ")");
    reserve(count);
    // The previous step's results have been read (finish() waited for them).
    rows_ = count;
    auto stream = context_.stream();
    std::memcpy(host_labels_, labels.data(), std::size_t(count) * 4);
    auto* device_labels = reinterpret_cast<int*>(device_buffer_.get());
    auto* device_losses = reinterpret_cast<float*>(device_labels + capacity_);
    auto* device_higher = reinterpret_cast<int*>(device_losses + capacity_);
    check(cudaMemcpyAsync(device_labels, host_labels_, std::size_t(count) * 4, cudaMemcpyHostToDevice, stream),
          "copying the labels");
    tensor::Tensor grad;
    if (gradient) grad = context_.allocate(tensor::Shape{logits.shape()[0], classes}, tensor::DType::f32);
    kernels::softmax_cross_entropy(logits.f32(), device_labels, count, classes, loss.smoothing(), context_.loss_scale,
                                   gradient ? grad.f32() : nullptr, device_losses, device_higher, stream);
    check(cudaMemcpyAsync(host_losses_, device_losses, std::size_t(count) * 4, cudaMemcpyDeviceToHost, stream),
          "copying the losses");
    check(cudaMemcpyAsync(host_higher_, device_higher, std::size_t(count) * 4, cudaMemcpyDeviceToHost, stream),
          "copying the ranks");
    check(cudaEventRecord(done_, stream), "cudaEventRecord");
    return grad;
}

nn::LossResult CudaDeviceLoss::finish() {
    context_.wait(done_, "waiting for the loss");
    nn::LossResult result;
    for (int r = 0; r < rows_; ++r) {
        result.loss += double(host_losses_[r]) / rows_;
        result.top1_hits += host_higher_[r] < 1;
        result.top5_hits += host_higher_[r] < 5;
    }
    return result;
}

}  // namespace trellis::cuda
