// SPDX-License-Identifier: Apache-2.0
// Optimizers update the parameter store in place from its gradients. Their state (momentum,
// mean squares) lives in flat buffers aligned with the store, so a checkpoint saves it as is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "trainer/nn/parameter_store.hpp"

namespace trellis::optim {

enum class OptimizerKind { sgd, rmsprop, lars };
// Its spellings: sgd (also "momentum"), rmsprop, lars.
const cli::Choices<OptimizerKind>& optimizer_kinds();

// Which parameters weight decay applies to: weights only (Goyal et al., torchvision's
// recipes), weights and biases but not batch norm's (tf_cnn_benchmarks' L2 loss over every
// variable without "batchnorm" in its name), or all of them.
enum class DecayOn { weights, weights_and_biases, all };
const cli::Choices<DecayOn>& decay_on_kinds();

struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::sgd;
    float momentum = 0.9f;
    bool nesterov = false;
    float weight_decay = 1e-4f;
    DecayOn decay_on = DecayOn::weights;
    float rmsprop_decay = 0.9f;
    float rmsprop_epsilon = 1.0f;  // TensorFlow's ImageNet recipes use 1.0
    float lars_eta = 0.001f;       // trust coefficient (You et al. 2017)
};

// A named buffer of optimizer state, one value per learned parameter value.
struct StateSlot {
    std::string name;
    std::vector<float>* values;
};

class Optimizer {
public:
    explicit Optimizer(const OptimizerConfig& config, nn::ParameterStore& store);
    virtual ~Optimizer() = default;
    virtual std::string name() const = 0;
    virtual void step(float learning_rate) = 0;
    virtual std::vector<StateSlot> state() = 0;

protected:
    float decay_of(const nn::Parameter& p) const;

    OptimizerConfig config_;
    nn::ParameterStore& store_;
};

// Throws UsageError naming the accepted optimizers.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, nn::ParameterStore& store);

}  // namespace trellis::optim
