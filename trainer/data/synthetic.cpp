// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "trainer/data/augment.hpp"
#include "trainer/data/rng.hpp"

namespace trellis::data {

std::int64_t SyntheticConfig::steps_per_epoch() const {
    return std::max<std::int64_t>(1, epoch_size / (static_cast<std::int64_t>(world_size) * batch_size));
}

SyntheticBatches::SyntheticBatches(SyntheticConfig config) : position_(config.start) {
    if (config.batch_size <= 0 || config.image_size <= 0 || config.num_classes <= 0 || config.world_size <= 0)
        throw UsageError("synthetic data: batch size " + std::to_string(config.batch_size) + ", image size " +
                         std::to_string(config.image_size) + ", " + std::to_string(config.num_classes) + " classes, " +
                         std::to_string(config.world_size) + " ranks (expected all >= 1)");
    steps_per_epoch_ = config.steps_per_epoch();
    Rng rng(mix_seed({config.seed, 0x73796e746865746cull}));
    std::size_t pixels = static_cast<std::size_t>(config.batch_size) * config.image_size * config.image_size;
    batch_.images.resize(pixels * 3);
    for (std::size_t i = 0; i < batch_.images.size(); ++i) {
        double deviation;
        do deviation = rng.normal();
        while (std::fabs(deviation) > 2.0);
        batch_.images[i] = normalize_channel(static_cast<float>(127.0 + 60.0 * deviation), static_cast<int>(i % 3));
    }
    batch_.labels.resize(static_cast<std::size_t>(config.batch_size));
    for (int& label : batch_.labels)
        label = static_cast<int>(rng.below(static_cast<std::uint64_t>(config.num_classes)));
    batch_.size = config.batch_size;
    batch_.image_size = config.image_size;
    batch_.unchanging = true;
}

const Batch& SyntheticBatches::next() {
    batch_.epoch = position_.epoch;
    batch_.index_in_epoch = position_.batch;
    if (++position_.batch == steps_per_epoch_) {
        position_.batch = 0;
        ++position_.epoch;
    }
    return batch_;
}

}  // namespace trellis::data
