// SPDX-License-Identifier: Apache-2.0
// What the trainer consumes: numbered batches of images (normalised floats, or bytes that the
// consumer normalises), from a decoding pipeline or from synthetic data, behind one interface.
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace trellis::data {

// Where a run is in its data: batch `batch` (0-based) of epoch `epoch`. Checkpoints store
// the position of the next batch, and a pipeline started there continues exactly.
struct Position {
    std::int64_t epoch = 0;
    std::int64_t batch = 0;
    auto operator<=>(const Position&) const = default;
};

struct Batch {
    std::vector<float> images;  // size x image_size x image_size x 3, NHWC, normalised
    // Or, from a pipeline asked for bytes (images then empty): the same pixels as 0..255
    // values, which the consumer normalises with `statistics`.
    std::vector<std::uint8_t> pixels;
    ChannelStatistics statistics;
    std::vector<int> labels;     // size entries, in [0, num_classes)
    int size = 0;                // the batch size, except for a short last evaluation batch
    std::vector<char> stand_in;  // 1 where a copy of another sample stands in for a bad one
    int image_size = 0;
    std::int64_t epoch = 0;
    std::int64_t index_in_epoch = 0;
    bool unchanging = false;  // the same images at every step (synthetic data)
};

class BatchSource {
public:
    virtual ~BatchSource() = default;
    // The next batch in order. The reference and its buffers stay valid until the next call
    // to next(): sources reuse their buffers instead of allocating one per step.
    virtual const Batch& next() = 0;
    // The position of the batch the next call to next() returns.
    virtual Position position() const = 0;
    virtual std::int64_t steps_per_epoch() const = 0;
};

}  // namespace trellis::data
