// SPDX-License-Identifier: Apache-2.0
// The join of a residual block after its main branch's last batch norm, as two steps: the
// norm as a layer of its own, then y = relu(a + b). What every backend runs unless it fuses them.
#pragma once

#include "trainer/nn/backend.hpp"

namespace trellis::nn {

class NormThenJoin : public NormalizedJoin {
public:
    NormThenJoin(LayerPtr norm, std::unique_ptr<ResidualJoin> join) : norm_(std::move(norm)), join_(std::move(join)) {}

    TensorSpec setup(const TensorSpec& a, const TensorSpec& b) override;
    void collect(ParameterStore& store) override { norm_->collect(store); }
    void initialize(std::mt19937_64& rng) override { norm_->initialize(rng); }
    tensor::Tensor forward(const tensor::Tensor& a, const tensor::Tensor& b, Mode mode) override;
    Gradients backward(const tensor::Tensor& output_grad) override;
    void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) override {
        join_->accumulate(target, addend);
    }

private:
    LayerPtr norm_;
    std::unique_ptr<ResidualJoin> join_;
};

}  // namespace trellis::nn
