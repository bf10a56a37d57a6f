// SPDX-License-Identifier: Apache-2.0
// Layers applied one after another; itself a layer, so blocks and whole networks nest.
#pragma once

#include <functional>
#include <vector>

#include "trainer/nn/layer.hpp"

namespace trellis::nn {

class Sequential : public Layer {
public:
    void add(LayerPtr layer) { layers_.push_back(std::move(layer)); }
    bool empty() const { return layers_.empty(); }

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override;
    void initialize(std::mt19937_64& rng) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override;
    // The same, calling `after(i)` once layer i's backward has run (last layer first), so
    // that gradient communication can start while earlier layers still compute.
    tensor::Tensor backward(const tensor::Tensor& output_grad, const std::function<void(std::size_t)>& after);
    const std::vector<LayerPtr>& layers() const { return layers_; }

private:
    std::vector<LayerPtr> layers_;
};

}  // namespace trellis::nn
