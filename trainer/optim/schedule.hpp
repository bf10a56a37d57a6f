// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules over training steps: a linear warmup from zero, then step decay,
// cosine decay or polynomial decay to the end of training. The base rate is already scaled
// by the global batch (the linear scaling rule: lr = lr_per_256 * global_batch / 256).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cli.hpp"

namespace trellis::optim {

enum class ScheduleKind { step, cosine, poly, constant };
// Its spellings: step, cosine, poly, constant.
const cli::Choices<ScheduleKind>& schedule_kinds();

struct ScheduleConfig {
    ScheduleKind kind = ScheduleKind::step;
    double base_lr = 0.1;
    std::int64_t warmup_steps = 0;
    std::int64_t total_steps = 1;
    std::vector<std::int64_t> boundaries;  // step decay: multiply by `decay` at each boundary
    double decay = 0.1;
    double power = 2.0;   // polynomial decay exponent
    double end_lr = 0.0;  // where cosine and poly end
};

// The schedule in words, every number that shapes the curve and no other, for the checkpoint
// and for comparing two runs: "step from lr 0.1, warmup 50 steps, x0.1 at 300,600".
std::string describe(const ScheduleConfig& config);

class Schedule {
public:
    // Throws UsageError on inconsistent numbers.
    explicit Schedule(ScheduleConfig config);
    double at(std::int64_t step) const;  // step counts from 0
    const ScheduleConfig& config() const { return config_; }

private:
    ScheduleConfig config_;
};

}  // namespace trellis::optim
