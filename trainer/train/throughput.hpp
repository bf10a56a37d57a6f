// SPDX-License-Identifier: Apache-2.0
// Images/sec as tf_cnn_benchmarks reports it: per-step rates after the warmup batches, their
// mean with an uncertainty, the jitter (1.4826 x the median absolute deviation, a robust
// spread), and the total over the timed steps.
#pragma once

#include <cstdint>
#include <vector>

namespace trellis::train {

class ThroughputMeter {
public:
    explicit ThroughputMeter(int warmup_batches) : warmup_(warmup_batches) {}
    void add(double seconds, std::int64_t images);

    bool timed() const { return !rates_.empty(); }
    double mean() const;
    double uncertainty() const;  // standard error of the mean
    double jitter() const;
    double total() const;  // timed images / timed seconds
    double last() const { return last_; }

private:
    int warmup_;
    int seen_ = 0;
    std::vector<double> rates_;
    double seconds_ = 0, last_ = 0;
    std::int64_t images_ = 0;
};

}  // namespace trellis::train
