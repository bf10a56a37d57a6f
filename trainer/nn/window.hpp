// SPDX-License-Identifier: Apache-2.0
// Where a convolution's or a pooling's kernel lands on an image: its height and width, its
// stride, and the padding on each side. The padding is given per side (PyTorch's form, and
// the ResNets') or is TensorFlow's SAME, which depends on the input: as much as keeps
// ceil(size / stride) outputs, the odd pixel going after (so a stride-2 SAME layer pads one
// more at the bottom and the right, as tf_cnn_benchmarks' models expect).
#pragma once

#include <cstdint>
#include <string>

#include "trainer/tensor/shape.hpp"

namespace trellis::nn {

struct Padding {
    int top = 0, left = 0, bottom = 0, right = 0;

    bool symmetric() const { return top == bottom && left == right; }
    bool operator==(const Padding&) const = default;
};

struct Window {
    int kernel_h = 1, kernel_w = 1;
    int stride = 1;
    bool same = false;  // TensorFlow's SAME: `padding` is worked out per input by resolved()
    Padding padding;

    // A square kernel with the same padding on every side.
    static Window square(int kernel, int stride = 1, int padding = 0) {
        return {kernel, kernel, stride, false, {padding, padding, padding, padding}};
    }
    static Window tf_same(int kernel_h, int kernel_w, int stride = 1) { return {kernel_h, kernel_w, stride, true, {}}; }
    static Window tf_valid(int kernel_h, int kernel_w, int stride = 1) {
        return {kernel_h, kernel_w, stride, false, {}};
    }

    // The window with its padding worked out for an input of height x width.
    Window resolved(std::int64_t height, std::int64_t width) const;
    // N x channels x H' x W' for an N x C x H x W input (checked by the caller); throws
    // UsageError naming `layer` when the input is smaller than the kernel.
    tensor::Shape output_shape(const tensor::Shape& input, std::int64_t channels, const std::string& layer) const;
    // "3x3/2 SAME", "1x7", "7x7/2 pad 3": for messages and the GPU's algorithm cache.
    std::string str() const;
};

}  // namespace trellis::nn
