// SPDX-License-Identifier: Apache-2.0
// The Caffe layer model: setup once for an input, then forward and backward per step, with
// gradients computed explicitly (no autograd). A layer keeps what its backward needs from the
// forward pass and lets go of it once backward has run, so activation memory falls as the
// backward pass proceeds.
#pragma once

#include <memory>
#include <random>
#include <string>

#include "trainer/nn/parameter_store.hpp"
#include "trainer/tensor/tensor.hpp"

namespace trellis::nn {

// A tensor without memory: what setup passes from layer to layer.
struct TensorSpec {
    tensor::Shape shape;
    std::shared_ptr<const tensor::Layout> layout;  // the backend's choice; null = plain
};

enum class Mode { train, eval };

class Layer {
public:
    virtual ~Layer() = default;

    // Creates the backend's primitives for this input and returns the output's spec.
    // `input_grad` says whether backward must produce the input's gradient.
    virtual TensorSpec setup(const TensorSpec& input, bool input_grad) = 0;
    // Registers the layer's parameters; the store binds their memory afterwards.
    virtual void collect(ParameterStore&) {}
    // Sets initial values once the memory is bound.
    virtual void initialize(std::mt19937_64&) {}

    virtual tensor::Tensor forward(const tensor::Tensor& input, Mode mode) = 0;
    // Adds this step's parameter gradients and returns the input's gradient (empty when
    // setup was told it is not needed).
    virtual tensor::Tensor backward(const tensor::Tensor& output_grad) = 0;

    // Multiply-accumulates of one forward pass over the batch set up (convolutions and fully
    // connected layers; the rest count as none), for the header's GMACs per image.
    virtual double multiply_accumulates() const { return 0; }
};

using LayerPtr = std::unique_ptr<Layer>;

}  // namespace trellis::nn
