// SPDX-License-Identifier: Apache-2.0
// Momentum SGD in PyTorch's form: v = m v + (g + wd w); w -= lr v, or with Nesterov
// w -= lr (g + wd w + m v).
#pragma once

#include "trainer/optim/optimizer.hpp"

namespace trellis::optim {

class Sgd : public Optimizer {
public:
    Sgd(const OptimizerConfig& config, nn::ParameterStore& store);
    std::string name() const override { return config_.nesterov ? "sgd (nesterov)" : "sgd"; }
    void step(float learning_rate) override;
    std::vector<StateSlot> state() override { return {{"momentum", &velocity_}}; }

private:
    std::vector<float> velocity_;
};

}  // namespace trellis::optim
