// SPDX-License-Identifier: Apache-2.0
// Time to accuracy, as the large-batch ImageNet papers report it: the wall time at which an
// evaluation's top-1 and top-5 accuracy first reached each of a fixed ladder of levels,
// counted from the first training step (evaluations included, as a user waits for them) over
// every segment of a resumed run (RunClock).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trellis::train {

class TimeToAccuracy {
public:
    struct Reached {
        std::string metric;  // "top1" or "top5"
        double level = 0;
        double seconds = 0;
        std::int64_t step = 0;
    };

    // The levels both accuracies are timed at.
    static const std::vector<double>& levels();

    // An evaluation's result: the levels it reached for the first time.
    std::vector<Reached> observe(double seconds, std::int64_t step, double top1, double top5);

    // The table: one line per level either accuracy reached, "-" where the other did not.
    // Empty when no evaluation reached any level.
    std::string table() const;

    // What a checkpoint carries to the resumed run.
    const std::vector<Reached>& reached() const { return reached_; }
    void restore(std::vector<Reached> reached) { reached_ = std::move(reached); }
    // A run resumed from a checkpoint that did not record the history: the table's times
    // count from `step`, and its heading says so.
    void count_from(std::int64_t step) { counted_from_ = step; }

private:
    std::optional<Reached> find(const std::string& metric, double level) const;
    std::vector<Reached> reached_;
    std::int64_t counted_from_ = 0;
};

}  // namespace trellis::train
