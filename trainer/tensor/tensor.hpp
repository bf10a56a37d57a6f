// SPDX-License-Identifier: Apache-2.0
// A tensor: logical shape, element type, device, and memory shared between the views of it.
// The physical layout is the backend's business (oneDNN picks blocked formats on the CPU,
// cuDNN NHWC on the GPU); a tensor without a layout is plain row-major in its logical order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "trainer/tensor/dtype.hpp"
#include "trainer/tensor/shape.hpp"

namespace trellis::tensor {

// What a backend knows about how the elements are placed in memory.
class Layout {
public:
    virtual ~Layout() = default;
    virtual std::size_t bytes() const = 0;
    virtual std::string name() const = 0;
};

class Tensor {
public:
    Tensor() = default;
    // Allocates from the host pool; plain layout unless `layout` is given.
    Tensor(Shape shape, DType dtype = DType::f32, std::shared_ptr<const Layout> layout = nullptr);
    // Wraps memory someone else owns (the pipeline's batch buffer, a parameter slice, a
    // backend's device allocation).
    Tensor(Shape shape, DType dtype, std::shared_ptr<const Layout> layout, std::shared_ptr<std::byte> memory,
           Device device = Device::cpu);

    bool empty() const { return !memory_; }
    const Shape& shape() const { return shape_; }
    DType dtype() const { return dtype_; }
    Device device() const { return device_; }
    const std::shared_ptr<const Layout>& layout() const { return layout_; }
    std::size_t bytes() const;

    void* data() const { return memory_.get(); }
    float* f32() const { return static_cast<float*>(data()); }
    const std::shared_ptr<std::byte>& memory() const { return memory_; }

    void zero();  // host tensors only

private:
    Shape shape_;
    DType dtype_ = DType::f32;
    Device device_ = Device::cpu;
    std::shared_ptr<const Layout> layout_;
    std::shared_ptr<std::byte> memory_;
};

}  // namespace trellis::tensor
