// SPDX-License-Identifier: Apache-2.0
#include "trainer/tensor/buffer_pool.hpp"

#include <cstdlib>
#include <new>

namespace trellis::tensor {

namespace {
constexpr std::size_t alignment = 64;
std::size_t rounded(std::size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; }
}  // namespace

std::shared_ptr<std::byte> BufferPool::acquire(std::size_t bytes) {
    bytes = rounded(bytes == 0 ? 1 : bytes);
    std::byte* memory = nullptr;
    {
        std::lock_guard lock(mutex_);
        auto found = free_.find(bytes);
        if (found != free_.end()) {
            memory = found->second;
            free_.erase(found);
        }
    }
    if (!memory) {
        memory = static_cast<std::byte*>(std::aligned_alloc(alignment, bytes));
        if (!memory) throw std::bad_alloc();
        std::lock_guard lock(mutex_);
        held_ += bytes;
    }
    return {memory, [this, bytes](std::byte* p) { give_back(p, bytes); }};
}

void BufferPool::give_back(std::byte* memory, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    free_.emplace(bytes, memory);
}

std::size_t BufferPool::bytes_held() const {
    std::lock_guard lock(mutex_);
    return held_;
}

void BufferPool::release_free() {
    std::lock_guard lock(mutex_);
    for (auto& [bytes, memory] : free_) {
        std::free(memory);
        held_ -= bytes;
    }
    free_.clear();
}

BufferPool& BufferPool::host() {
    // Never destroyed: tensors held in static storage may give memory back at exit.
    static auto* pool = new BufferPool();
    return *pool;
}

}  // namespace trellis::tensor
