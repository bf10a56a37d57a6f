// SPDX-License-Identifier: Apache-2.0
#include "trainer/optim/rmsprop.hpp"

#include <cmath>

namespace trellis::optim {

RmsProp::RmsProp(const OptimizerConfig& config, nn::ParameterStore& store)
    // TensorFlow starts the mean square at 1 so that the first steps are not huge.
    : Optimizer(config, store),
      mean_square_(static_cast<std::size_t>(store.learned_elements()), 1.0f),
      momentum_(mean_square_.size(), 0.0f) {}

void RmsProp::step(float lr) {
    const float rho = config_.rmsprop_decay, eps = config_.rmsprop_epsilon, m = config_.momentum;
    std::size_t offset = 0;
    for (auto* p : store_.learned()) {
        const float wd = decay_of(*p);
        float *w = p->value, *g = p->grad, *ms = mean_square_.data() + offset, *mom = momentum_.data() + offset;
        const std::int64_t n = p->elements();
#pragma omp parallel for if (n > 32768)
        for (std::int64_t i = 0; i < n; ++i) {
            float d = g[i] + wd * w[i];
            ms[i] = rho * ms[i] + (1 - rho) * d * d;
            mom[i] = m * mom[i] + lr * d / std::sqrt(ms[i] + eps);
            w[i] -= mom[i];
        }
        offset += static_cast<std::size_t>(n);
    }
}

}  // namespace trellis::optim
