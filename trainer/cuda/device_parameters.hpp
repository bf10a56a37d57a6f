// SPDX-License-Identifier: Apache-2.0
// The device copies of a ParameterStore: f32 master values, f32 gradients and statistics in
// the store's order, each parameter starting on a multiple of 64 elements
// (gpu/padded_layout.hpp), plus, under bf16/f16, a low-precision copy of the values and of the
// gradients for the convolutions to read and write. Convolution weights are kept on the
// device as O x H x W x I (cuDNN's NHWC filters) and in the store as O x I x H x W; the copies
// between host and device permute them, and scatter or gather the padding.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trainer/gpu/padded_layout.hpp"
#include "trainer/nn/parameter_store.hpp"
#include "trainer/tensor/dtype.hpp"

namespace trellis::cuda {

class DeviceParameters {
public:
    DeviceParameters() = default;
    DeviceParameters(const DeviceParameters&) = delete;
    ~DeviceParameters();

    // Before bind(): this weight is a convolution's, stored O x H x W x I on the device; or a
    // fully connected layer's over images, O x (I x H x W) seen as the shape `oihw`.
    void hold_as_ohwi(const nn::Parameter& weight) { ohwi_.push_back({&weight, weight.shape}); }
    void hold_as_ohwi(const nn::Parameter& weight, const tensor::Shape& oihw) { ohwi_.push_back({&weight, oihw}); }
    void bind(nn::ParameterStore& store, tensor::DType low_type, cudaStream_t stream);
    bool bound() const { return store_ != nullptr; }

    float* value(const nn::Parameter& p) const;
    float* grad(const nn::Parameter& p) const;
    void* low_value(const nn::Parameter& p) const;  // the f32 value when not in mixed precision
    void* low_grad(const nn::Parameter& p) const;   // the f32 gradient when not in mixed precision
    tensor::DType low_type() const { return low_type_; }
    bool mixed() const { return low_type_ != tensor::DType::f32; }

    float* values() const { return values_; }
    float* grads() const { return grads_; }
    void* low_values() const { return low_values_; }
    std::size_t learned_elements() const { return learned_; }  // on the device, padding included
    // Where the store's flat offset of a learned value is on the device.
    std::size_t device_offset(std::size_t host_offset) const { return learned_layout_.device_offset(host_offset); }
    const gpu::PaddedLayout& learned_layout() const { return learned_layout_; }
    nn::ParameterStore& store() const { return *store_; }

    // Host <-> device, synchronously on `stream`, permuting convolution weights.
    void upload_values();
    void upload_learned_values();  // the statistics stay as the device has them
    void download_values();
    void upload_grads();
    void download_grads();
    // Any array laid out like the store's learned values (optimizer state) to and from one laid
    // out like the device's.
    void upload_learned(std::span<const float> host, float* device);
    void download_learned(const float* device, std::span<float> host);
    void refresh_low_values();  // after the master values changed

private:
    std::size_t host_offset_of(const nn::Parameter& p) const;
    std::size_t offset_of(const nn::Parameter& p) const;                 // on the device
    void permute(std::span<float> device_layout, bool to_device) const;  // OIHW <-> OHWI in place
    void upload_statistics();
    void download_statistics();
    void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) const;

    nn::ParameterStore* store_ = nullptr;
    cudaStream_t stream_ = nullptr;
    tensor::DType low_type_ = tensor::DType::f32;
    std::vector<std::pair<const nn::Parameter*, tensor::Shape>> ohwi_;
    gpu::PaddedLayout learned_layout_, statistics_layout_;
    std::size_t learned_ = 0, statistics_ = 0;  // device elements
    float* values_ = nullptr;
    float* grads_ = nullptr;
    float* statistic_values_ = nullptr;
    void* low_values_ = nullptr;
    void* low_grads_ = nullptr;
    float* staging_ = nullptr;  // learned_ floats, page-locked where the limit allows
    bool staging_pinned_ = false;
    std::vector<float> pageable_staging_;
};

}  // namespace trellis::cuda
