// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/concat.hpp"

#include "common/error.hpp"

namespace trellis::nn {

Concat::Concat(std::vector<std::unique_ptr<Sequential>> branches, std::unique_ptr<ChannelConcat> join)
    : branches_(std::move(branches)), join_(std::move(join)) {
    if (branches_.size() < 2) throw UsageError("a concatenation needs at least two branches");
}

TensorSpec Concat::setup(const TensorSpec& input, bool input_grad) {
    input_grad_ = input_grad;
    std::vector<TensorSpec> outputs;
    for (auto& branch : branches_) outputs.push_back(branch->empty() ? input : branch->setup(input, input_grad));
    return join_->setup(outputs);
}

void Concat::collect(ParameterStore& store) {
    for (auto& branch : branches_) branch->collect(store);
}

void Concat::initialize(std::mt19937_64& rng) {
    for (auto& branch : branches_) branch->initialize(rng);
}

tensor::Tensor Concat::forward(const tensor::Tensor& input, Mode mode) {
    std::vector<tensor::Tensor> outputs;
    for (auto& branch : branches_) outputs.push_back(branch->empty() ? input : branch->forward(input, mode));
    return join_->forward(outputs);
}

tensor::Tensor Concat::backward(const tensor::Tensor& output_grad) {
    auto grads = join_->backward(output_grad);
    tensor::Tensor input_grad;
    // The last branch first, as its parameters were registered last.
    for (std::size_t i = branches_.size(); i-- > 0;) {
        auto grad = branches_[i]->empty() ? grads[i] : branches_[i]->backward(grads[i]);
        if (!input_grad_) continue;
        if (input_grad.empty())
            input_grad = grad;
        else
            join_->accumulate(input_grad, grad);
    }
    return input_grad;
}

double Concat::multiply_accumulates() const {
    double total = 0;
    for (const auto& layer : branches_) total += layer->multiply_accumulates();
    return total;
}

}  // namespace trellis::nn
