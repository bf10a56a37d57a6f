// SPDX-License-Identifier: Apache-2.0
// A pipeline batch as the model takes it: normalised floats, or bytes with what normalises them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "trainer/data/batch.hpp"
#include "trainer/models/model.hpp"

namespace trellis::train {

models::Images images_of(const data::Batch& batch);

// The real samples of evaluation batches, packed at the front of buffers of the model's batch
// size: copies standing in for unreadable samples are left out, and a short batch is padded
// (the model scores only the first `count`).
class PackedBatch {
public:
    PackedBatch(int batch_size, std::size_t image_values);

    // Packs `batch`; returns how many samples it holds.
    int pack(const data::Batch& batch);
    models::Images images() const;
    std::span<const int> labels() const { return labels_; }

private:
    std::size_t image_values_;
    bool raw_ = false;  // the last batch packed was bytes
    std::vector<float> floats_;
    std::vector<std::uint8_t> bytes_;
    data::ChannelStatistics statistics_;
    std::vector<int> labels_;
};

}  // namespace trellis::train
