#include "trainer/cuda/device_pool.hpp"

#include <algorithm>
#include <atomic>

#include "trainer/cuda/cuda_check.hpp"

namespace trellis::nn::cuda {

namespace {
// Sizes are rounded so that activations of nearby shapes share blocks: 512 bytes below
// 1 MiB, 2 MiB above.
std::size_t rounded(std::size_t bytes) {
    std::size_t unit = bytes < (1u << 20) ? 512 : (2u << 20);
    return (std::max<std::size_t>(bytes, 1) + unit - 1) / unit * unit;
}
}  // namespace

namespace {
std::atomic<std::size_t> allocated_outside_pool{0};
}

void* device_allocate(std::size_t bytes, const std::string& what) {
    void* memory = nullptr;
    bytes = std::max<std::size_t>(bytes, 4);
    check(cudaMalloc(&memory, bytes), "cudaMalloc of " + std::to_string(bytes >> 20) + " MiB for " + what);
    allocated_outside_pool += bytes;
    return memory;
}

std::size_t device_allocated_bytes() { return allocated_outside_pool; }

DevicePool::~DevicePool() { release_free(); }

std::shared_ptr<std::byte> DevicePool::acquire(std::size_t bytes) {
    bytes = rounded(bytes);
    std::byte* memory = nullptr;
    {
        std::lock_guard lock(mutex_);
        // The smallest cached block that fits, if it wastes at most a quarter.
        auto found = free_.lower_bound(bytes);
        if (found != free_.end() && found->first <= bytes + bytes / 4) {
            bytes = found->first;
            memory = found->second;
            free_.erase(found);
        }
    }
    if (!memory) {
        void* allocated = nullptr;
        cudaError_t status = cudaMalloc(&allocated, bytes);
        if (status == cudaErrorMemoryAllocation) {
            // Out of memory with blocks cached: give them back and try once more.
            cudaGetLastError();
            release_free();
            status = cudaMalloc(&allocated, bytes);
        }
        if (status != cudaSuccess) {
            std::size_t free_bytes = 0, total = 0;
            cudaMemGetInfo(&free_bytes, &total);
            check(status, "cudaMalloc of " + std::to_string(bytes >> 20) + " MiB (held " +
                              std::to_string(bytes_held() >> 20) + " MiB, device free " +
                              std::to_string(free_bytes >> 20) + " of " + std::to_string(total >> 20) +
                              " MiB; a smaller --batch-size or --cudnn-workspace-mb may fit)");
        }
        memory = static_cast<std::byte*>(allocated);
        std::lock_guard lock(mutex_);
        held_ += bytes;
        peak_ = std::max(peak_, held_);
    }
    return {memory, [this, bytes](std::byte* p) { give_back(p, bytes); }};
}

void DevicePool::give_back(std::byte* memory, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    free_.emplace(bytes, memory);
}

std::size_t DevicePool::bytes_held() const {
    std::lock_guard lock(mutex_);
    return held_;
}

std::size_t DevicePool::peak_bytes() const {
    std::lock_guard lock(mutex_);
    return peak_;
}

void DevicePool::release_free() {
    std::lock_guard lock(mutex_);
    for (auto& [bytes, memory] : free_) {
        cudaFree(memory);
        held_ -= bytes;
    }
    free_.clear();
}

}  // namespace trellis::nn::cuda
