// SPDX-License-Identifier: Apache-2.0
#include "trainer/optim/lars.hpp"

#include <cmath>

namespace trellis::optim {

Lars::Lars(const OptimizerConfig& config, nn::ParameterStore& store)
    : Optimizer(config, store), velocity_(static_cast<std::size_t>(store.learned_elements()), 0.0f) {}

double Lars::trust_ratio(double weight_norm, double grad_norm, double weight_decay, double eta) {
    double denominator = grad_norm + weight_decay * weight_norm;
    if (weight_norm <= 0 || denominator <= 0) return 1.0;
    return eta * weight_norm / denominator;
}

void Lars::step(float lr) {
    const float m = config_.momentum;
    float* velocity = velocity_.data();
    for (auto* p : store_.learned()) {
        const float wd = decay_of(*p);
        float *w = p->value, *g = p->grad;
        const std::int64_t n = p->elements();
        double local_lr = lr;
        if (p->kind == nn::ParameterKind::weight) {
            double w2 = 0, g2 = 0;
#pragma omp parallel for reduction(+ : w2, g2) if (n > 32768)
            for (std::int64_t i = 0; i < n; ++i) {
                w2 += double(w[i]) * w[i];
                g2 += double(g[i]) * g[i];
            }
            local_lr *= trust_ratio(std::sqrt(w2), std::sqrt(g2), wd, config_.lars_eta);
        }
        const float step = float(local_lr);
#pragma omp parallel for simd if (n > 32768)
        for (std::int64_t i = 0; i < n; ++i) {
            float v = velocity[i] = m * velocity[i] + step * (g[i] + wd * w[i]);
            w[i] -= v;
        }
        velocity += n;
    }
}

}  // namespace trellis::optim
