// SPDX-License-Identifier: Apache-2.0
// Parallel branches over one input, their outputs side by side along the channels: the
// modules of GoogLeNet and Inception. A branch that forks part way (Inception's 1x3 and 3x1
// after a shared 3x3) is a Sequential ending in a Concat of its own.
#pragma once

#include <vector>

#include "trainer/nn/backend.hpp"
#include "trainer/nn/sequential.hpp"

namespace trellis::nn {

class Concat : public Layer {
public:
    Concat(std::vector<std::unique_ptr<Sequential>> branches, std::unique_ptr<ChannelConcat> join);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    void collect(ParameterStore& store) override;
    void initialize(std::mt19937_64& rng) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;
    double multiply_accumulates() const override;

private:
    std::vector<std::unique_ptr<Sequential>> branches_;
    std::unique_ptr<ChannelConcat> join_;
    bool input_grad_ = true;
};

}  // namespace trellis::nn
