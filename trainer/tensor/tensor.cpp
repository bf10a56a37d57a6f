// SPDX-License-Identifier: Apache-2.0
#include "trainer/tensor/tensor.hpp"

#include <cstring>

#include "trainer/tensor/buffer_pool.hpp"

namespace trellis::tensor {

Tensor::Tensor(Shape shape, DType dtype, std::shared_ptr<const Layout> layout)
    : shape_(std::move(shape)), dtype_(dtype), layout_(std::move(layout)) {
    memory_ = BufferPool::host().acquire(bytes());
}

Tensor::Tensor(Shape shape, DType dtype, std::shared_ptr<const Layout> layout, std::shared_ptr<std::byte> memory,
               Device device)
    : shape_(std::move(shape)),
      dtype_(dtype),
      device_(device),
      layout_(std::move(layout)),
      memory_(std::move(memory)) {}

std::size_t Tensor::bytes() const {
    if (layout_) return layout_->bytes();
    return static_cast<std::size_t>(shape_.elements()) * element_size(dtype_);
}

void Tensor::zero() { std::memset(data(), 0, bytes()); }

}  // namespace trellis::tensor
