// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/residual_block.hpp"

namespace trellis::nn {

ResidualBlock::ResidualBlock(std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut,
                             std::unique_ptr<NormalizedJoin> join)
    : main_(std::move(main)), shortcut_(std::move(shortcut)), join_(std::move(join)) {}

TensorSpec ResidualBlock::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    auto main = main_->setup(input, input_grad);
    auto shortcut = shortcut_->empty() ? input : shortcut_->setup(input, input_grad);
    return join_->setup(main, shortcut);
}

// The join's norm ends the main branch: its parameters come before the shortcut's, as they
// did when the norm was the branch's last layer (checkpoints and buckets keep their order).
void ResidualBlock::collect(ParameterStore& store) {
    main_->collect(store);
    join_->collect(store);
    shortcut_->collect(store);
}

void ResidualBlock::initialize(std::mt19937_64& rng) {
    main_->initialize(rng);
    join_->initialize(rng);
    shortcut_->initialize(rng);
}

tensor::Tensor ResidualBlock::forward(const tensor::Tensor& input, Mode mode) {
    auto main = main_->forward(input, mode);
    auto shortcut = shortcut_->empty() ? input : shortcut_->forward(input, mode);
    return join_->forward(main, shortcut, mode);
}

tensor::Tensor ResidualBlock::backward(const tensor::Tensor& output_grad) {
    auto grad = join_->backward(output_grad);
    auto input_grad = main_->backward(grad.a);
    auto shortcut_grad = shortcut_->empty() ? grad.b : shortcut_->backward(grad.b);
    if (input_grad_) join_->accumulate(input_grad, shortcut_grad);
    return input_grad;
}

}  // namespace trellis::nn
