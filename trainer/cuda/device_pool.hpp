// SPDX-License-Identifier: Apache-2.0
// A caching allocator of device memory. cudaMalloc and cudaFree synchronise the device, so
// freed blocks are kept by size and handed out again. Every kernel runs on the one compute
// stream, in order, so a block given back while that stream still reads it can be reused at
// once by later work on the same stream (work on other streams holds its memory itself).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace trellis::cuda {

class DevicePool {
public:
    DevicePool() = default;
    DevicePool(const DevicePool&) = delete;
    ~DevicePool();

    std::shared_ptr<std::byte> acquire(std::size_t bytes);
    std::size_t bytes_held() const;
    std::size_t peak_bytes() const;  // the most ever held, cached blocks included
    void release_free();

private:
    // Shared with the blocks handed out, which hold it weakly: a block given back after the
    // pool has gone is freed, not cached in a pool that no longer exists.
    struct State {
        std::mutex mutex;
        std::multimap<std::size_t, std::byte*> free;
        std::size_t held = 0, peak = 0;
    };
    std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Long-lived device memory outside the pool (parameters, gradients, optimizer state), counted
// so that the reported peak includes it.
void* device_allocate(std::size_t bytes, const std::string& what);
std::size_t device_allocated_bytes();

}  // namespace trellis::cuda
