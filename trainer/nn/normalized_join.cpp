// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/normalized_join.hpp"

namespace trellis::nn {

std::unique_ptr<NormalizedJoin> Backend::normalized_join(const BatchNormSpec& norm, const std::string& name) {
    return std::make_unique<NormThenJoin>(batch_norm(norm), residual_join(name));
}

TensorSpec NormThenJoin::setup(const TensorSpec& a, const TensorSpec& b) {
    // The branch before the norm always wants its gradient.
    return join_->setup(norm_->setup(a, true), b);
}

tensor::Tensor NormThenJoin::forward(const tensor::Tensor& a, const tensor::Tensor& b, Mode mode) {
    return join_->forward(norm_->forward(a, mode), b, mode);
}

NormalizedJoin::Gradients NormThenJoin::backward(const tensor::Tensor& output_grad) {
    auto joined = join_->backward(output_grad);
    return {norm_->backward(joined), joined};
}

}  // namespace trellis::nn
