// SPDX-License-Identifier: Apache-2.0
// LARS (You, Gitman and Ginsburg 2017): each weight tensor's step is scaled by the trust ratio
// eta ||w|| / (||g|| + wd ||w||), so large batches train without diverging. Batch norm
// parameters and biases take the plain momentum step, as in MLPerf's ResNet recipes.
#pragma once

#include "trainer/optim/optimizer.hpp"

namespace trellis::optim {

class Lars : public Optimizer {
public:
    Lars(const OptimizerConfig& config, nn::ParameterStore& store);
    std::string name() const override { return "lars"; }
    void step(float learning_rate) override;
    std::vector<StateSlot> state() override { return {{"momentum", &velocity_}}; }

    // The trust ratio of one tensor (1 when either norm is zero).
    static double trust_ratio(double weight_norm, double grad_norm, double weight_decay, double eta);

private:
    std::vector<float> velocity_;
};

}  // namespace trellis::optim
