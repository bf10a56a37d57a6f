// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/time_to_accuracy.hpp"

#include <cstdio>

namespace trellis::train {

const std::vector<double>& TimeToAccuracy::levels() {
    static const std::vector<double> ladder{0.50, 0.60, 0.70, 0.75, 0.80, 0.85, 0.90, 0.91,
                                            0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99};
    return ladder;
}

std::optional<TimeToAccuracy::Reached> TimeToAccuracy::find(const std::string& metric, double level) const {
    for (const auto& r : reached_)
        if (r.metric == metric && r.level == level) return r;
    return std::nullopt;
}

std::vector<TimeToAccuracy::Reached> TimeToAccuracy::observe(double seconds, std::int64_t step, double top1,
                                                             double top5) {
    std::vector<Reached> now;
    for (auto [metric, value] : {std::pair<std::string, double>{"top1", top1}, {"top5", top5}})
        for (double level : levels())
            if (value >= level && !find(metric, level)) now.push_back({metric, level, seconds, step});
    reached_.insert(reached_.end(), now.begin(), now.end());
    return now;
}

std::string TimeToAccuracy::table() const {
    if (reached_.empty()) return "";
    auto cell = [](const std::optional<Reached>& r) {
        if (!r) return std::string("-");
        char text[64];
        std::snprintf(text, sizeof text, "%.1f s (step %lld)", r->seconds, static_cast<long long>(r->step));
        return std::string(text);
    };
    std::string out = "Time to accuracy (wall time from the first step):\n";
    if (counted_from_ > 0)
        out = "Time to accuracy (wall time from step " + std::to_string(counted_from_) +
              ", where this run resumed: times before step " + std::to_string(counted_from_) + " were not recorded):\n";
    char line[160];
    std::snprintf(line, sizeof line, "  %-8s %-26s %s\n", "level", "top-5", "top-1");
    out += line;
    for (double level : levels()) {
        auto top5 = find("top5", level), top1 = find("top1", level);
        if (!top5 && !top1) continue;
        std::snprintf(line, sizeof line, "  %-8.2f %-26s %s\n", level, cell(top5).c_str(), cell(top1).c_str());
        out += line;
    }
    return out;
}

}  // namespace trellis::train
