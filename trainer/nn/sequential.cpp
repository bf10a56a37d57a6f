// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/sequential.hpp"

namespace trellis::nn {

TensorSpec Sequential::setup(const TensorSpec& input, bool input_grad) {
    TensorSpec spec = input;
    for (auto& layer : layers_) {
        spec = layer->setup(spec, input_grad);
        input_grad = true;  // every later layer's input is an earlier layer's output
    }
    return spec;
}

void Sequential::collect(ParameterStore& store) {
    for (auto& layer : layers_) layer->collect(store);
}

void Sequential::initialize(std::mt19937_64& rng) {
    for (auto& layer : layers_) layer->initialize(rng);
}

tensor::Tensor Sequential::forward(const tensor::Tensor& input, Mode mode) {
    // Each output is dropped as soon as the next layer has run, unless a layer kept it for
    // its backward pass.
    tensor::Tensor x = input;
    for (auto& layer : layers_) x = layer->forward(x, mode);
    return x;
}

tensor::Tensor Sequential::backward(const tensor::Tensor& output_grad) { return backward(output_grad, {}); }

tensor::Tensor Sequential::backward(const tensor::Tensor& output_grad, const std::function<void(std::size_t)>& after) {
    tensor::Tensor grad = output_grad;
    for (std::size_t i = layers_.size(); i-- > 0;) {
        grad = layers_[i]->backward(grad);
        if (after) after(i);
    }
    return grad;
}

double Sequential::multiply_accumulates() const {
    double total = 0;
    for (const auto& layer : layers_) total += layer->multiply_accumulates();
    return total;
}

}  // namespace trellis::nn
