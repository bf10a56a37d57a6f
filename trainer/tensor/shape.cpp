// SPDX-License-Identifier: Apache-2.0
#include "trainer/tensor/shape.hpp"

namespace trellis::tensor {

std::int64_t Shape::elements() const {
    std::int64_t count = 1;
    for (auto d : dims_) count *= d;
    return count;
}

std::string Shape::str() const {
    std::string text;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
        if (i) text += 'x';
        text += std::to_string(dims_[i]);
    }
    return text;
}

}  // namespace trellis::tensor
