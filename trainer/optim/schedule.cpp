// SPDX-License-Identifier: Apache-2.0
#include "trainer/optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::optim {

const cli::Choices<ScheduleKind>& schedule_kinds() {
    static const cli::Choices<ScheduleKind> choices{{{"step", ScheduleKind::step},
                                                     {"cosine", ScheduleKind::cosine},
                                                     {"poly", ScheduleKind::poly},
                                                     {"constant", ScheduleKind::constant}}};
    return choices;
}

Schedule::Schedule(ScheduleConfig config) : config_(std::move(config)) {
    if (config_.base_lr <= 0) throw UsageError("the learning rate must be positive");
    if (config_.warmup_steps < 0) throw UsageError("warmup must not be negative");
    config_.total_steps = std::max<std::int64_t>(config_.total_steps, 1);
    std::sort(config_.boundaries.begin(), config_.boundaries.end());
}

std::string describe(const ScheduleConfig& c) {
    auto number = [](double value) {
        char text[32];
        std::snprintf(text, sizeof text, "%.6g", value);
        return std::string(text);
    };
    // The length of the run shapes only the decays that end with it: a step schedule may be
    // extended with more steps and stay the same curve.
    std::string text = schedule_kinds().name(c.kind) + " from lr " + number(c.base_lr) + ", warmup " +
                       std::to_string(c.warmup_steps) + " steps";
    if (c.kind == ScheduleKind::step && !c.boundaries.empty()) {
        text += ", x" + number(c.decay) + " at ";
        for (std::size_t i = 0; i < c.boundaries.size(); ++i) text += (i ? "," : "") + std::to_string(c.boundaries[i]);
    }
    if (c.kind == ScheduleKind::poly) text += ", power " + number(c.power);
    if (c.kind == ScheduleKind::cosine || c.kind == ScheduleKind::poly)
        text += ", to " + number(c.end_lr) + " at step " + std::to_string(c.total_steps);
    return text;
}

double Schedule::at(std::int64_t step) const {
    const auto& c = config_;
    if (step < c.warmup_steps) return c.base_lr * double(step + 1) / double(c.warmup_steps);
    if (c.kind == ScheduleKind::constant) return c.base_lr;
    if (c.kind == ScheduleKind::step) {
        double lr = c.base_lr;
        for (auto boundary : c.boundaries)
            if (step >= boundary) lr *= c.decay;
        return lr;
    }
    // Cosine and polynomial decay run over the steps after the warmup.
    double span = double(std::max<std::int64_t>(c.total_steps - c.warmup_steps, 1));
    double progress = std::clamp(double(step - c.warmup_steps) / span, 0.0, 1.0);
    double factor = c.kind == ScheduleKind::cosine ? 0.5 * (1 + std::cos(std::numbers::pi * progress))
                                                   : std::pow(1 - progress, c.power);
    return c.end_lr + (c.base_lr - c.end_lr) * factor;
}

}  // namespace trellis::optim
