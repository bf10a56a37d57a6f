// SPDX-License-Identifier: Apache-2.0
// Optimizer updates against hand-computed values, and which parameters decay.
#include "tests/catch.hpp"

#include <cmath>

#include "trainer/optim/lars.hpp"
#include "trainer/optim/optimizer.hpp"

using namespace trellis;

namespace {

struct TwoParameters {
    nn::Parameter weight{"conv.weight", tensor::Shape{2}, nn::ParameterKind::weight};
    nn::Parameter scale{"bn.weight", tensor::Shape{1}, nn::ParameterKind::norm_scale};
    nn::ParameterStore store;
    TwoParameters() {
        store.add(weight);
        store.add(scale);
        store.allocate();
        weight.value[0] = 1.0f, weight.value[1] = -2.0f, scale.value[0] = 1.0f;
        weight.grad[0] = 0.5f, weight.grad[1] = 0.25f, scale.grad[0] = 1.0f;
    }
};

}  // namespace

TEST_CASE("momentum SGD: first two steps, weight decay on weights only") {
    TwoParameters p;
    optim::OptimizerConfig config;
    config.weight_decay = 0.1f;
    auto sgd = optim::make_optimizer(config, p.store);
    sgd->step(0.5f);
    // v = g + wd w = 0.5 + 0.1 = 0.6; w = 1 - 0.5 * 0.6
    CHECK(p.weight.value[0] == Approx(0.7));
    CHECK(p.scale.value[0] == Approx(0.5));  // no decay: v = 1
    sgd->step(0.5f);
    // v = 0.9 * 0.6 + (0.5 + 0.1 * 0.7) = 1.11
    CHECK(p.weight.value[0] == Approx(0.7 - 0.5 * 1.11));
}

TEST_CASE("Nesterov momentum and decaying norm parameters when asked") {
    TwoParameters p;
    optim::OptimizerConfig config;
    config.nesterov = true;
    config.weight_decay = 0.1f;
    config.decay_on = optim::DecayOn::all;
    auto sgd = optim::make_optimizer(config, p.store);
    sgd->step(1.0f);
    // d = 1 + 0.1; v = 1.1; step = d + 0.9 v = 2.09
    CHECK(p.scale.value[0] == Approx(1.0 - 2.09));
}

TEST_CASE("RMSProp: TensorFlow's form with the mean square starting at 1") {
    TwoParameters p;
    optim::OptimizerConfig config;
    config.kind = optim::OptimizerKind::rmsprop;
    config.weight_decay = 0;
    auto rms = optim::make_optimizer(config, p.store);
    rms->step(0.1f);
    double ms = 0.9 * 1 + 0.1 * 0.25;
    CHECK(p.weight.value[0] == Approx(1.0 - 0.1 * 0.5 / std::sqrt(ms + 1.0)));
    CHECK(rms->state().size() == 2);
}

TEST_CASE("LARS scales each weight tensor's step by its trust ratio") {
    CHECK(optim::Lars::trust_ratio(2.0, 1.0, 0.0, 0.001) == Approx(0.002));
    CHECK(optim::Lars::trust_ratio(0.0, 1.0, 0.0, 0.001) == 1.0);
    TwoParameters p;
    optim::OptimizerConfig config;
    config.kind = optim::OptimizerKind::lars;
    config.weight_decay = 0;
    auto lars = optim::make_optimizer(config, p.store);
    lars->step(10.0f);
    double weight_norm = std::sqrt(5.0), grad_norm = std::sqrt(0.3125);
    double local = 10.0 * 0.001 * weight_norm / grad_norm;
    CHECK(p.weight.value[0] == Approx(1.0 - local * 0.5));
    CHECK(p.scale.value[0] == Approx(1.0 - 10.0));  // norm parameters take the plain step
}

TEST_CASE("unknown optimizer and bad momentum are refused") {
    TwoParameters p;
    optim::OptimizerConfig config;
    CHECK_THROWS_WITH(optim::optimizer_kinds().parse("adam", "--optimizer"),
                      Catch::Contains("accepted: sgd, rmsprop, lars"));
    CHECK(optim::optimizer_kinds().parse("momentum", "--optimizer") == optim::OptimizerKind::sgd);
    CHECK(optim::optimizer_kinds().name(optim::OptimizerKind::sgd) == "sgd");  // what checkpoints record
    config.momentum = 1.5f;
    CHECK_THROWS(optim::make_optimizer(config, p.store));
}

TEST_CASE("weight decay on weights, on weights and biases (tf_cnn_benchmarks), or on everything") {
    nn::ParameterStore store;
    nn::Parameter weight{"conv0.weight", tensor::Shape{1}, nn::ParameterKind::weight};
    nn::Parameter bias{"conv0.bias", tensor::Shape{1}, nn::ParameterKind::bias};
    nn::Parameter shift{"conv0.bn.bias", tensor::Shape{1}, nn::ParameterKind::norm_shift};
    for (auto* p : {&weight, &bias, &shift}) store.add(*p);
    store.allocate();
    auto after_one_step = [&](optim::DecayOn on) {
        for (auto* p : {&weight, &bias, &shift}) p->value[0] = 1.0f, p->grad[0] = 0.0f;
        optim::OptimizerConfig config;
        config.momentum = 0;
        config.weight_decay = 0.5f;
        config.decay_on = on;
        optim::make_optimizer(config, store)->step(1.0f);
        return std::vector<float>{weight.value[0], bias.value[0], shift.value[0]};
    };
    CHECK(after_one_step(optim::DecayOn::weights) == std::vector<float>{0.5f, 1.0f, 1.0f});
    CHECK(after_one_step(optim::DecayOn::weights_and_biases) == std::vector<float>{0.5f, 0.5f, 1.0f});
    CHECK(after_one_step(optim::DecayOn::all) == std::vector<float>{0.5f, 0.5f, 0.5f});
}
