// SPDX-License-Identifier: Apache-2.0
#include "tests/unit/gradient_check.hpp"

#include <algorithm>

namespace trellis::test {

GradientCheck::GradientCheck(nn::Backend& backend, nn::Layer& layer, nn::TensorSpec input, std::uint64_t seed)
    : backend_(backend), layer_(layer), input_spec_(std::move(input)), rng_(seed) {
    output_spec_ = layer_.setup(input_spec_, true);
    layer_.collect(store_);
    store_.allocate();
    layer_.initialize(rng_);
    // Nudge every learned value off its initial constant so that gamma=1, beta=0 and friends
    // are not special points.
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : store_.values()) v += 0.3f * normal(rng_);
    this->input.resize(static_cast<std::size_t>(input_spec_.shape.elements()));
    for (auto& v : this->input) v = normal(rng_);
    weights_.resize(static_cast<std::size_t>(output_spec_.shape.elements()));
    for (auto& v : weights_) v = normal(rng_);
}

double GradientCheck::objective() {
    auto x = backend_.from_plain(input, input_spec_);
    auto y = backend_.to_plain(layer_.forward(x, nn::Mode::train));
    layer_.backward(backend_.from_plain(weights_, output_spec_));  // releases what forward kept
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += double(y[i]) * weights_[i];
    return sum;
}

void GradientCheck::record(GradientCheckResult& result, double analytic, const std::function<void(float)>& nudge,
                           float original, double eps, const std::string& where) {
    nudge(float(original + eps));
    double plus = objective();
    nudge(float(original - eps));
    double minus = objective();
    nudge(original);
    double centre = objective();
    double numeric = (plus - minus) / (2 * eps);
    // One-sided slopes that disagree mean the step crossed a kink: not a fair comparison.
    double right = (plus - centre) / eps, left = (centre - minus) / eps;
    if (std::abs(right - left) > 0.02 * std::max(1.0, std::abs(numeric))) {
        ++result.skipped;
        return;
    }
    ++result.checked;
    double error = std::abs(analytic - numeric) / std::max(1.0, std::abs(numeric));
    if (error > result.worst_error) {
        result.worst_error = error;
        result.worst_where = where + ": analytic " + std::to_string(analytic) + " numeric " + std::to_string(numeric);
    }
}

GradientCheckResult GradientCheck::run(int samples, double eps) {
    // Analytic gradients at the unperturbed point.
    store_.zero_grads();
    auto x = backend_.from_plain(input, input_spec_);
    layer_.forward(x, nn::Mode::train);
    auto input_grad = backend_.to_plain(layer_.backward(backend_.from_plain(weights_, output_spec_)));
    std::vector<float> grads(store_.grads().begin(), store_.grads().end());

    GradientCheckResult result;
    auto pick = [&](std::size_t size) { return std::uniform_int_distribution<std::size_t>(0, size - 1)(rng_); };
    for (int s = 0; s < samples; ++s) {
        auto i = pick(input.size());
        record(
            result, input_grad[i], [&](float v) { input[i] = v; }, input[i], eps, "input[" + std::to_string(i) + "]");
    }
    std::size_t offset = 0;
    for (auto* p : store_.learned()) {
        for (int s = 0; s < samples; ++s) {
            auto i = pick(static_cast<std::size_t>(p->elements()));
            float* value = p->value + i;
            record(
                result, grads[offset + i], [&](float v) { *value = v; }, *value, eps,
                p->name + "[" + std::to_string(i) + "]");
        }
        offset += static_cast<std::size_t>(p->elements());
    }
    return result;
}

}  // namespace trellis::test
