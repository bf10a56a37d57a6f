// SPDX-License-Identifier: Apache-2.0
// The logical shape of a tensor, outermost dimension first (N, C, H, W for images), whatever
// physical layout the backend stores it in.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace trellis::tensor {

class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
    explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

    std::size_t rank() const { return dims_.size(); }
    std::int64_t operator[](std::size_t i) const { return dims_.at(i); }
    const std::vector<std::int64_t>& dims() const { return dims_; }
    std::int64_t elements() const;
    std::string str() const;  // "16x3x224x224"

    bool operator==(const Shape&) const = default;

private:
    std::vector<std::int64_t> dims_;
};

}  // namespace trellis::tensor
