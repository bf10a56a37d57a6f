// SPDX-License-Identifier: Apache-2.0
// RMSProp as TensorFlow's ImageNet recipes run it: ms = rho ms + (1 - rho) g^2;
// mom = m mom + lr g / sqrt(ms + eps); w -= mom.
#pragma once

#include "trainer/optim/optimizer.hpp"

namespace trellis::optim {

class RmsProp : public Optimizer {
public:
    RmsProp(const OptimizerConfig& config, nn::ParameterStore& store);
    std::string name() const override { return "rmsprop"; }
    void step(float learning_rate) override;
    std::vector<StateSlot> state() override { return {{"mean_square", &mean_square_}, {"momentum", &momentum_}}; }

private:
    std::vector<float> mean_square_, momentum_;
};

}  // namespace trellis::optim
