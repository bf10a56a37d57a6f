// SPDX-License-Identifier: Apache-2.0
// Synthetic data in the manner of tf_cnn_benchmarks: one random batch, generated once from
// a fixed seed and served at every step, so that a benchmark measures the model and the
// communication, not the input pipeline.
#pragma once

#include <cstdint>

#include "trainer/data/batch.hpp"

namespace trellis::data {

struct SyntheticConfig {
    int batch_size = 32;
    int image_size = 224;
    int num_classes = 1000;
    std::uint64_t seed = 0;
    // Epochs have no meaning here, but the learning-rate schedule counts in them: an epoch is
    // as long as one over this many samples (ImageNet-1k's training set by default).
    std::int64_t epoch_size = 1281167;
    int world_size = 1;
    Position start;

    // floor(epoch_size / (world_size x batch_size)), at least 1.
    std::int64_t steps_per_epoch() const;
};

class SyntheticBatches : public BatchSource {
public:
    // Pixels are drawn as tf_cnn_benchmarks does (a normal distribution of mean 127 and
    // standard deviation 60 on 0..255, truncated at two deviations), then normalised like
    // real images; labels are uniform in [0, num_classes).
    explicit SyntheticBatches(SyntheticConfig config);

    const Batch& next() override;
    Position position() const override { return position_; }
    std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }

private:
    Batch batch_;
    Position position_;
    std::int64_t steps_per_epoch_;
};

}  // namespace trellis::data
