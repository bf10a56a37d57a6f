// SPDX-License-Identifier: Apache-2.0
// A learnable parameter (or a statistic the model keeps, such as batch norm's running mean).
// Values and gradients are slices of the ParameterStore's flat buffers, plain row-major, so
// the optimizer, the checkpoint and the collectives see every parameter as one array.
#pragma once

#include <cstdint>
#include <string>

#include "trainer/tensor/shape.hpp"

namespace trellis::nn {

enum class ParameterKind {
    weight,        // convolution and fully connected weights: weight decay applies
    bias,          // fully connected and convolution biases
    norm_scale,    // batch norm gamma
    norm_shift,    // batch norm beta
    running_stat,  // batch norm running mean/variance: not learned, saved with the model
};

struct Parameter {
    std::string name;
    tensor::Shape shape;
    ParameterKind kind = ParameterKind::weight;
    float* value = nullptr;
    float* grad = nullptr;  // null for running statistics

    std::int64_t elements() const { return shape.elements(); }
    bool learned() const { return kind != ParameterKind::running_stat; }
};

}  // namespace trellis::nn
