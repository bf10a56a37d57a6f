// SPDX-License-Identifier: Apache-2.0
#include "trainer/optim/sgd.hpp"

namespace trellis::optim {

Sgd::Sgd(const OptimizerConfig& config, nn::ParameterStore& store)
    : Optimizer(config, store), velocity_(static_cast<std::size_t>(store.learned_elements()), 0.0f) {}

void Sgd::step(float lr) {
    const float m = config_.momentum;
    const bool nesterov = config_.nesterov;
    float* velocity = velocity_.data();
    for (auto* p : store_.learned()) {
        const float wd = decay_of(*p);
        float *w = p->value, *g = p->grad;
        const std::int64_t n = p->elements();
#pragma omp parallel for simd if (n > 32768)
        for (std::int64_t i = 0; i < n; ++i) {
            float d = g[i] + wd * w[i];
            float v = velocity[i] = m * velocity[i] + d;
            w[i] -= lr * (nesterov ? d + m * v : v);
        }
        velocity += n;
    }
}

}  // namespace trellis::optim
