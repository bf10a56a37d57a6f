// SPDX-License-Identifier: Apache-2.0
// The flat parameters as the GPU holds them: each parameter starts on a multiple of
// `alignment` elements (64: 256 bytes in f32, 128 in bf16/f16), the gaps zero. cuDNN's tensor-core kernels
// want 16-byte aligned operands, and packed back to back a parameter is aligned only to its
// element size, so that cuDNN would offer fewer and slower algorithms. The host keeps the
// packed layout (checkpoints, host collectives, parameter servers); copies scatter and gather.
// Zeros in the gaps stay zero under every optimizer and add nothing to any norm or sum.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace trellis::gpu {

class PaddedLayout {
public:
    PaddedLayout() = default;
    explicit PaddedLayout(std::span<const std::size_t> sizes, std::size_t alignment = 64) {
        std::size_t host = 0, device = 0;
        for (auto size : sizes) {
            host_starts_.push_back(host);
            device_starts_.push_back(device);
            host += size;
            device += (size + alignment - 1) / alignment * alignment;
        }
        host_size_ = host;
        device_size_ = device;
    }

    std::size_t host_size() const { return host_size_; }
    std::size_t device_size() const { return device_size_; }
    std::size_t count() const { return host_starts_.size(); }
    std::size_t device_start(std::size_t parameter) const { return device_starts_[parameter]; }

    // The device offset of a host offset inside a parameter, or of the end.
    std::size_t device_offset(std::size_t host_offset) const {
        if (host_offset >= host_size_) return device_size_;
        auto p = std::size_t(std::upper_bound(host_starts_.begin(), host_starts_.end(), host_offset) -
                             host_starts_.begin()) -
                 1;
        return device_starts_[p] + (host_offset - host_starts_[p]);
    }

    // host (packed) -> device (padded, the gaps zeroed) and back.
    void scatter(std::span<const float> host, std::span<float> device) const {
        std::fill(device.begin(), device.end(), 0.0f);
        for (std::size_t p = 0; p < count(); ++p)
            std::copy_n(host.begin() + std::ptrdiff_t(host_starts_[p]), size_of(p),
                        device.begin() + std::ptrdiff_t(device_starts_[p]));
    }
    void gather(std::span<const float> device, std::span<float> host) const {
        for (std::size_t p = 0; p < count(); ++p)
            std::copy_n(device.begin() + std::ptrdiff_t(device_starts_[p]), size_of(p),
                        host.begin() + std::ptrdiff_t(host_starts_[p]));
    }

private:
    std::size_t size_of(std::size_t p) const {
        return (p + 1 < count() ? host_starts_[p + 1] : host_size_) - host_starts_[p];
    }

    std::vector<std::size_t> host_starts_, device_starts_;
    std::size_t host_size_ = 0, device_size_ = 0;
};

}  // namespace trellis::gpu
