// SPDX-License-Identifier: Apache-2.0
// Dropout, the part both backends share: in training each value of an N x F matrix (after a
// fully connected layer or the spatial mean) is kept with probability `keep` and scaled by
// 1/keep, the mask a function of the model's DropoutDraw (dropout_mask.hpp); in evaluation,
// and with keep 1, the identity. A backend applies the mask.
#pragma once

#include "trainer/nn/dropout_mask.hpp"
#include "trainer/nn/layer.hpp"

namespace trellis::nn {

class Dropout : public Layer {
public:
    Dropout(std::string name, float keep, const DropoutDraw& draw);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

protected:
    // out[i] = keeps(key, i, threshold) ? in[i] * scale : 0, forward and backward alike.
    virtual tensor::Tensor masked(const tensor::Tensor& in, std::uint64_t key, std::uint64_t threshold,
                                  float scale) const = 0;

    std::string name_;
    tensor::Shape shape_;

private:
    float keep_;
    const DropoutDraw& draw_;
    std::uint64_t key_ = 0;  // the mask of the last training forward pass
};

}  // namespace trellis::nn
