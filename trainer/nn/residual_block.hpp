// SPDX-License-Identifier: Apache-2.0
// A residual block: y = relu(norm(main(x)) + shortcut(x)), where the shortcut is the identity
// or a projection (1x1 convolution and batch norm) when the shape changes, and `norm` is the
// main branch's last batch norm, held by the join so that a backend may fuse the two.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/sequential.hpp"

namespace trellis::nn {

class ResidualBlock : public Layer {
public:
    ResidualBlock(std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut,
                  std::unique_ptr<NormalizedJoin> join);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override;
    void initialize(std::mt19937_64& rng) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override {
        return main_->multiply_accumulates() + shortcut_->multiply_accumulates();
    }

private:
    std::unique_ptr<Sequential> main_, shortcut_;
    std::unique_ptr<NormalizedJoin> join_;
    bool input_grad_ = true;
};

}  // namespace trellis::nn
