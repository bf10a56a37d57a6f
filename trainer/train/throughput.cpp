// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/throughput.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trellis::train {

void ThroughputMeter::add(double seconds, std::int64_t images) {
    last_ = seconds > 0 ? double(images) / seconds : 0;
    if (seen_++ < warmup_) return;
    rates_.push_back(last_);
    seconds_ += seconds;
    images_ += images;
}

double ThroughputMeter::mean() const {
    return rates_.empty() ? last_ : std::accumulate(rates_.begin(), rates_.end(), 0.0) / double(rates_.size());
}

double ThroughputMeter::uncertainty() const {
    if (rates_.size() < 2) return 0;
    double m = mean(), squares = 0;
    for (double r : rates_) squares += (r - m) * (r - m);
    return std::sqrt(squares / double(rates_.size() - 1)) / std::sqrt(double(rates_.size()));
}

double ThroughputMeter::jitter() const {
    if (rates_.empty()) return 0;
    auto median_of = [](std::vector<double> values) {
        std::nth_element(values.begin(), values.begin() + long(values.size() / 2), values.end());
        return values[values.size() / 2];
    };
    double median = median_of(rates_);
    std::vector<double> deviations;
    for (double r : rates_) deviations.push_back(std::abs(r - median));
    return 1.4826 * median_of(deviations);
}

double ThroughputMeter::total() const { return seconds_ > 0 ? double(images_) / seconds_ : last_; }

}  // namespace trellis::train
