// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/device_pool.hpp"

#include <algorithm>
#include <atomic>

#include "trainer/cuda/check.hpp"

namespace trellis::cuda {

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
        std::lock_guard lock(state_->mutex);
        // The smallest cached block that fits, if it wastes at most a quarter.
        auto found = state_->free.lower_bound(bytes);
        if (found != state_->free.end() && found->first <= bytes + bytes / 4) {
            bytes = found->first;
            memory = found->second;
            state_->free.erase(found);
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
        std::lock_guard lock(state_->mutex);
        state_->held += bytes;
        state_->peak = std::max(state_->peak, state_->held);
    }
    // A tensor may outlive its pool: its block then goes straight back to CUDA.
    return {memory, [pool = std::weak_ptr<State>(state_), bytes](std::byte* p) {
                if (auto state = pool.lock()) {
                    std::lock_guard lock(state->mutex);
                    state->free.emplace(bytes, p);
                } else {
                    cudaFree(p);
                }
            }};
}

std::size_t DevicePool::bytes_held() const {
    std::lock_guard lock(state_->mutex);
    return state_->held;
}

std::size_t DevicePool::peak_bytes() const {
    std::lock_guard lock(state_->mutex);
    return state_->peak;
}

void DevicePool::release_free() {
    std::lock_guard lock(state_->mutex);
    for (auto& [bytes, memory] : state_->free) {
        cudaFree(memory);
        state_->held -= bytes;
    }
    state_->free.clear();
}

}  // namespace trellis::cuda
