// SPDX-License-Identifier: Apache-2.0
// The prefetching input pipeline: worker threads load, decode and augment the samples of the
// next few batches while the trainer runs the current one.
//
// Batches are reproducible: which samples form batch k of epoch e is fixed by the
// BatchPlan, and each sample's augmentation is seeded from (seed, epoch, dataset index), so
// thread count and timing change nothing. A bad sample (unreadable file, corrupt JPEG, CRC
// mismatch, malformed Example) is skipped with one warning naming it, and its slot is
// filled with a copy of the next good sample of the same batch (cyclically), keeping the
// batch shape; with `strict` it is an error instead, thrown from next().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "trainer/data/augment.hpp"
#include "trainer/data/batch.hpp"
#include "trainer/data/batch_plan.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/warning.hpp"

namespace trellis::data {

struct PipelineConfig {
    std::shared_ptr<const Dataset> dataset;
    int batch_size = 32;
    int image_size = 224;
    TransformKind transform = TransformKind::training;  // evaluation: no shuffle, no flip
    bool augment = true;                                // false: training shuffles but transforms as evaluation does
    std::uint64_t seed = 0;
    int rank = 0;
    int world_size = 1;
    int threads = 4;
    int prefetch = 2;  // batches decoded ahead of the one the trainer holds
    bool strict = false;
    // Batches of bytes (Batch::pixels) instead of normalised floats, for a consumer that
    // normalises them itself (the GPU backend).
    bool raw_pixels = false;
    Position start;    // resume here (from a checkpoint)
    WarningSink warn;  // skipped samples; stderr when empty
};

// Counted as batches are handed out by next(), so they describe what the trainer received.
struct PipelineCounters {
    std::int64_t samples_delivered = 0;  // real samples, copies standing in for bad ones excluded
    std::int64_t bad_samples = 0;
};

class Pipeline : public BatchSource {
public:
    // Starts the workers. Throws DataError when the dataset cannot fill one batch per rank,
    // UsageError for a bad configuration (the start position included).
    explicit Pipeline(PipelineConfig config);
    // Stops and joins the workers; they finish at most the sample each is decoding.
    ~Pipeline() override;
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // The batch at position(). Blocks until it is ready. Rethrows the DataError of a bad
    // sample in strict mode, or of a batch with no good sample; the position does not
    // advance then, and further calls throw the same error.
    const Batch& next() override;
    Position position() const override;
    std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }
    PipelineCounters counters() const;

    // Stops the workers; next() then throws. Idempotent.
    void stop();

private:
    struct Slot;
    void assign(Slot& slot, std::int64_t sequence);
    void work();
    void decode_samples(JpegDecoder& decoder, RgbImage& scratch);
    void finish(Slot& slot);
    Slot* claimable_slot();

    PipelineConfig config_;
    BatchPlan plan_;
    std::int64_t steps_per_epoch_;
    std::size_t image_values_;      // floats or bytes per image
    ChannelStatistics statistics_;  // the dataset's (ImageNet's for JPEG datasets)

    mutable std::mutex mutex_;
    std::condition_variable work_available_;
    std::condition_variable batch_ready_;
    std::vector<std::unique_ptr<Slot>> slots_;
    std::int64_t delivered_ = 0;  // batches returned by next()
    bool holding_ = false;        // the trainer holds the slot of batch delivered_ - 1
    bool stopping_ = false;
    std::exception_ptr failure_;  // a worker died: every next() rethrows it
    std::vector<std::thread> workers_;

    std::atomic<std::int64_t> samples_delivered_{0};
    std::atomic<std::int64_t> bad_samples_{0};
};

}  // namespace trellis::data
