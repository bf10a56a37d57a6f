// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/dropout.hpp"

#include "common/error.hpp"

namespace trellis::nn {

Dropout::Dropout(std::string name, float keep, const DropoutDraw& draw)
    : name_(std::move(name)), keep_(keep), draw_(draw) {
    if (!(keep > 0.0f && keep <= 1.0f)) throw UsageError(name_ + ": the keep probability must be in (0, 1]");
}

TensorSpec Dropout::setup(const TensorSpec& input, bool) {
    shape_ = input.shape;
    if (shape_.rank() != 2) throw UsageError(name_ + ": dropout takes an N x F matrix, got " + shape_.str());
    return input;
}

tensor::Tensor Dropout::forward(const tensor::Tensor& input, Mode mode) {
    if (mode == Mode::eval || keep_ == 1.0f) return input;
    key_ = dropout_key(draw_, name_);
    return masked(input, key_, keep_threshold(keep_), 1.0f / keep_);
}

tensor::Tensor Dropout::backward(const tensor::Tensor& output_grad) {
    return keep_ == 1.0f ? output_grad : masked(output_grad, key_, keep_threshold(keep_), 1.0f / keep_);
}

}  // namespace trellis::nn
