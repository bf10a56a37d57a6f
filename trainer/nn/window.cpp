// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/window.hpp"

#include <algorithm>
#include <tuple>

#include "common/error.hpp"

namespace trellis::nn {

namespace {

// TensorFlow's SAME along one axis: {before, after}.
std::pair<int, int> same_padding(std::int64_t size, int kernel, int stride) {
    std::int64_t outputs = (size + stride - 1) / stride;
    auto total = int(std::max<std::int64_t>((outputs - 1) * stride + kernel - size, 0));
    return {total / 2, total - total / 2};
}

}  // namespace

Window Window::resolved(std::int64_t height, std::int64_t width) const {
    if (!same) return *this;
    Window w = *this;
    w.same = false;
    std::tie(w.padding.top, w.padding.bottom) = same_padding(height, kernel_h, stride);
    std::tie(w.padding.left, w.padding.right) = same_padding(width, kernel_w, stride);
    return w;
}

tensor::Shape Window::output_shape(const tensor::Shape& input, std::int64_t channels, const std::string& layer) const {
    auto w = resolved(input[2], input[3]);
    std::int64_t height = input[2] + w.padding.top + w.padding.bottom,
                 width = input[3] + w.padding.left + w.padding.right;
    if (height < kernel_h || width < kernel_w)
        throw UsageError(layer + ": a " + str() + " window does not fit a " + std::to_string(input[2]) + "x" +
                         std::to_string(input[3]) + " input (use larger images)");
    return tensor::Shape{input[0], channels, (height - kernel_h) / stride + 1, (width - kernel_w) / stride + 1};
}

std::string Window::str() const {
    std::string s = std::to_string(kernel_h) + "x" + std::to_string(kernel_w);
    if (stride != 1) s += "/" + std::to_string(stride);
    if (same) return s + " SAME";
    const auto& p = padding;
    if (p == Padding{}) return s;
    if (p.symmetric() && p.top == p.left) return s + " pad " + std::to_string(p.top);
    return s + " pad " + std::to_string(p.top) + "," + std::to_string(p.left) + "," + std::to_string(p.bottom) + "," +
           std::to_string(p.right);
}

}  // namespace trellis::nn
