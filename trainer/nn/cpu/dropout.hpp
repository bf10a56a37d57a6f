// Dropout on a plain N x F matrix (after a fully connected layer or the spatial mean): in
// training each value is kept with probability `keep` and scaled by 1/keep, the mask a
// function of the model's DropoutDraw (dropout_mask.hpp); in evaluation the identity.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/nn/dropout_mask.hpp"

namespace trellis::nn::cpu {

class Dropout : public Layer {
public:
    Dropout(std::string name, float keep, const DropoutDraw& draw);

    TensorSpec setup(const TensorSpec& input, bool input_grad) override;
    tensor::Tensor forward(const tensor::Tensor& input, Mode mode) override;
    tensor::Tensor backward(const tensor::Tensor& output_grad) override;

private:
    // out[i] = keeps(i) ? in[i] / keep : 0, forward and backward alike.
    tensor::Tensor masked(const tensor::Tensor& in) const;

    std::string name_;
    float keep_;
    const DropoutDraw& draw_;
    tensor::Shape shape_;
    std::uint64_t key_ = 0;  // the mask of the last training forward pass
};

}  // namespace trellis::nn::cpu
