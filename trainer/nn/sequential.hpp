// Layers applied one after another; itself a layer, so blocks and whole networks nest.
#pragma once

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

private:
    std::vector<LayerPtr> layers_;
};

}  // namespace trellis::nn
