// SPDX-License-Identifier: Apache-2.0
// Reuses host allocations of equal size. Gradients of activations live only from one layer's
// backward to the next, so recycling them keeps the peak memory near the activations alone.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace trellis::tensor {

class BufferPool {
public:
    // Memory of at least `bytes`, 64-byte aligned; returned to the pool when the last owner
    // lets go of it.
    std::shared_ptr<std::byte> acquire(std::size_t bytes);
    std::size_t bytes_held() const;  // allocated, in use or free
    void release_free();             // gives free buffers back to the system

    static BufferPool& host();

private:
    void give_back(std::byte* memory, std::size_t bytes);

    mutable std::mutex mutex_;
    std::multimap<std::size_t, std::byte*> free_;
    std::size_t held_ = 0;
};

}  // namespace trellis::tensor
