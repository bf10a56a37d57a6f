// SPDX-License-Identifier: Apache-2.0
#include "trainer/optim/optimizer.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/optim/lars.hpp"
#include "trainer/optim/rmsprop.hpp"
#include "trainer/optim/sgd.hpp"

namespace trellis::optim {

Optimizer::Optimizer(const OptimizerConfig& config, nn::ParameterStore& store) : config_(config), store_(store) {
    if (config.weight_decay < 0) throw UsageError("--weight-decay must not be negative");
    if (config.momentum < 0 || config.momentum >= 1) throw UsageError("--momentum must be in [0, 1)");
}

float Optimizer::decay_of(const nn::Parameter& p) const {
    bool decays = false;
    switch (config_.decay_on) {
    case DecayOn::weights: decays = p.kind == nn::ParameterKind::weight; break;
    case DecayOn::weights_and_biases:
        decays = p.kind == nn::ParameterKind::weight || p.kind == nn::ParameterKind::bias;
        break;
    case DecayOn::all: decays = true; break;
    }
    return decays ? config_.weight_decay : 0.0f;
}

const cli::Choices<DecayOn>& decay_on_kinds() {
    static const cli::Choices<DecayOn> choices{
        {{"weights", DecayOn::weights}, {"weights-and-biases", DecayOn::weights_and_biases}, {"all", DecayOn::all}}};
    return choices;
}

const cli::Choices<OptimizerKind>& optimizer_kinds() {
    static const cli::Choices<OptimizerKind> choices{{{"sgd", OptimizerKind::sgd},
                                                      {"rmsprop", OptimizerKind::rmsprop},
                                                      {"lars", OptimizerKind::lars},
                                                      {"momentum", OptimizerKind::sgd}}};
    return choices;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, nn::ParameterStore& store) {
    switch (config.kind) {
    case OptimizerKind::rmsprop: return std::make_unique<RmsProp>(config, store);
    case OptimizerKind::lars: return std::make_unique<Lars>(config, store);
    case OptimizerKind::sgd: break;
    }
    return std::make_unique<Sgd>(config, store);
}

}  // namespace trellis::optim
