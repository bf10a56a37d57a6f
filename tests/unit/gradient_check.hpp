// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checks for layers: f = sum(w * layer(x)) with a fixed random w,
// whose analytic gradients are backward(w); compared with central differences at sampled
// coordinates of the input and of every learned parameter.
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "trainer/nn/backend.hpp"

namespace trellis::test {

struct GradientCheckResult {
    int checked = 0;
    int skipped = 0;         // coordinates where the perturbation crossed a kink (ReLU, max)
    double worst_error = 0;  // |analytic - numeric| / max(1, |numeric|)
    std::string worst_where;
};

class GradientCheck {
public:
    GradientCheck(nn::Backend& backend, nn::Layer& layer, nn::TensorSpec input, std::uint64_t seed = 7);

    // `samples` coordinates of the input and of each parameter; eps is the perturbation.
    GradientCheckResult run(int samples, double eps = 1e-3);

    std::vector<float> input;  // plain NCHW; tests may overwrite before run()

private:
    double objective();
    void record(GradientCheckResult& result, double analytic, const std::function<void(float)>& nudge, float original,
                double eps, const std::string& where);

    nn::Backend& backend_;
    nn::Layer& layer_;
    nn::TensorSpec input_spec_, output_spec_;
    nn::ParameterStore store_;
    std::vector<float> weights_;
    std::mt19937_64 rng_;
};

}  // namespace trellis::test
