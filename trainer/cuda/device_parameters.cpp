// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/device_parameters.hpp"

#include <algorithm>

#include "trainer/cuda/check.hpp"
#include "trainer/cuda/device_pool.hpp"
#include "trainer/cuda/kernels.hpp"

namespace trellis::cuda {

DeviceParameters::~DeviceParameters() {
    if (staging_pinned_) cudaFreeHost(staging_);
    for (void* p : {static_cast<void*>(values_), static_cast<void*>(grads_), static_cast<void*>(statistic_values_),
                    low_values_, low_grads_})
        if (p) cudaFree(p);
}

void DeviceParameters::bind(nn::ParameterStore& store, tensor::DType low_type, cudaStream_t stream) {
    store_ = &store;
    stream_ = stream;
    low_type_ = low_type;
    auto layout = [](const std::vector<nn::Parameter*>& parameters) {
        std::vector<std::size_t> sizes;
        for (const auto* p : parameters) sizes.push_back(std::size_t(p->elements()));
        return gpu::PaddedLayout(sizes);
    };
    learned_layout_ = layout(store.learned());
    statistics_layout_ = layout(store.statistics());
    learned_ = learned_layout_.device_size();
    statistics_ = statistics_layout_.device_size();
    auto allocate = [](void** p, std::size_t bytes, const char* what) { *p = device_allocate(bytes, what); };
    allocate(reinterpret_cast<void**>(&values_), learned_ * 4, "parameters");
    allocate(reinterpret_cast<void**>(&grads_), learned_ * 4, "gradients");
    allocate(reinterpret_cast<void**>(&statistic_values_), statistics_ * 4, "batch norm statistics");
    check(cudaMemsetAsync(grads_, 0, learned_ * 4, stream_), "clearing the gradients");
    // Every copy of learned values goes through one page-locked buffer in the device's layout,
    // so that the gradient and parameter round trips of host collectives and parameter servers
    // run at full PCIe speed. Not fatal when refused (a locked-memory limit): pageable memory
    // is then staged by the driver.
    void* pinned = nullptr;
    staging_pinned_ = learned_ && cudaMallocHost(&pinned, learned_ * 4) == cudaSuccess;
    cudaGetLastError();
    if (staging_pinned_) {
        staging_ = static_cast<float*>(pinned);
    } else {
        pageable_staging_.resize(learned_);
        staging_ = pageable_staging_.data();
    }
    if (mixed()) {
        allocate(&low_values_, learned_ * 2, "low-precision parameters");
        allocate(&low_grads_, learned_ * 2, "low-precision gradients");
    }
    upload_values();
}

std::size_t DeviceParameters::host_offset_of(const nn::Parameter& p) const {
    auto base = p.learned() ? store_->values().data() : store_->statistic_values().data();
    return std::size_t(p.value - base);
}

std::size_t DeviceParameters::offset_of(const nn::Parameter& p) const {
    return (p.learned() ? learned_layout_ : statistics_layout_).device_offset(host_offset_of(p));
}

float* DeviceParameters::value(const nn::Parameter& p) const {
    return (p.learned() ? values_ : statistic_values_) + offset_of(p);
}

float* DeviceParameters::grad(const nn::Parameter& p) const { return grads_ + offset_of(p); }

void* DeviceParameters::low_value(const nn::Parameter& p) const {
    if (!mixed()) return value(p);
    return static_cast<std::byte*>(low_values_) + offset_of(p) * 2;
}

void* DeviceParameters::low_grad(const nn::Parameter& p) const {
    if (!mixed()) return grad(p);
    return static_cast<std::byte*>(low_grads_) + offset_of(p) * 2;
}

void DeviceParameters::permute(std::span<float> device_layout, bool to_device) const {
    std::vector<float> scratch;
    for (const auto& [p, s] : ohwi_) {  // s: O x I x H x W
        std::int64_t o = s[0], i = s[1], hw = s[2] * s[3];
        float* w = device_layout.data() + offset_of(*p);
        scratch.assign(w, w + p->elements());
        for (std::int64_t a = 0; a < o; ++a)
            for (std::int64_t b = 0; b < i; ++b)
                for (std::int64_t k = 0; k < hw; ++k) {
                    std::int64_t oihw = (a * i + b) * hw + k, ohwi = (a * hw + k) * i + b;
                    if (to_device)
                        w[ohwi] = scratch[std::size_t(oihw)];
                    else
                        w[oihw] = scratch[std::size_t(ohwi)];
                }
    }
}

void DeviceParameters::copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) const {
    check(cudaMemcpyAsync(to, from, bytes, kind, stream_), "copying parameters");
    check(cudaStreamSynchronize(stream_), "copying parameters");
}

void DeviceParameters::upload_learned(std::span<const float> host, float* device) {
    std::span<float> staged(staging_, learned_);
    learned_layout_.scatter(host, staged);
    permute(staged, true);
    copy(device, staging_, learned_ * 4, cudaMemcpyHostToDevice);
}

void DeviceParameters::download_learned(const float* device, std::span<float> host) {
    std::span<float> staged(staging_, learned_);
    copy(staging_, device, learned_ * 4, cudaMemcpyDeviceToHost);
    permute(staged, false);
    learned_layout_.gather(staged, host);
}

// The statistics are a few values per channel: staged in pageable memory.
void DeviceParameters::upload_statistics() {
    std::vector<float> staged(statistics_);
    statistics_layout_.scatter(store_->statistic_values(), staged);
    copy(statistic_values_, staged.data(), statistics_ * 4, cudaMemcpyHostToDevice);
}

void DeviceParameters::download_statistics() {
    std::vector<float> staged(statistics_);
    copy(staged.data(), statistic_values_, statistics_ * 4, cudaMemcpyDeviceToHost);
    statistics_layout_.gather(staged, store_->statistic_values());
}

void DeviceParameters::upload_values() {
    upload_learned(store_->values(), values_);
    upload_statistics();
    refresh_low_values();
}

void DeviceParameters::upload_learned_values() {
    upload_learned(store_->values(), values_);
    refresh_low_values();
}

void DeviceParameters::download_values() {
    download_learned(values_, store_->values());
    download_statistics();
}

void DeviceParameters::upload_grads() { upload_learned(store_->grads(), grads_); }
void DeviceParameters::download_grads() { download_learned(grads_, store_->grads()); }

void DeviceParameters::refresh_low_values() {
    if (mixed()) kernels::convert(values_, tensor::DType::f32, low_values_, low_type_, learned_, 1.0f, stream_);
}

}  // namespace trellis::cuda
