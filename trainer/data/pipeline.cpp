// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/pipeline.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/error.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/grey_transform.hpp"
#include "trainer/data/jpeg.hpp"
#include "trainer/data/rng.hpp"

namespace trellis::data {

// One batch being prepared (or held by the trainer). Workers claim its samples one at a
// time, so that all threads help finish the oldest batch first.
struct Pipeline::Slot {
    Batch batch;
    std::vector<std::size_t> indices;  // dataset index of each sample
    std::vector<char> good;
    std::int64_t sequence = -1;  // batches counted from the start position
    std::size_t claimed = 0, finished = 0;
    int bad = 0;
    std::vector<std::string> problems;  // what was wrong with each bad sample
    std::exception_ptr error;
    bool ready = false;
};

namespace {

PipelineConfig checked(PipelineConfig config) {
    auto refuse = [](const std::string& what) { throw UsageError("data pipeline: " + what); };
    if (!config.dataset) refuse("no dataset");
    if (config.image_size <= 0) refuse("image size " + std::to_string(config.image_size) + " (expected >= 1)");
    if (config.threads <= 0) refuse(std::to_string(config.threads) + " threads (expected >= 1)");
    if (config.prefetch <= 0) refuse("prefetch depth " + std::to_string(config.prefetch) + " (expected >= 1)");
    return config;
}

}  // namespace

Pipeline::Pipeline(PipelineConfig config)
    : config_(checked(std::move(config))),
      plan_(config_.dataset->size(), config_.batch_size, config_.rank, config_.world_size,
            config_.transform == TransformKind::training, config_.seed),
      steps_per_epoch_(plan_.batches_per_epoch()),
      image_values_(static_cast<std::size_t>(config_.image_size) * config_.image_size * 3),
      statistics_(config_.dataset->statistics()) {
    config_.warn = or_stderr(config_.warn);
    if (config_.start.epoch < 0 || config_.start.batch < 0 || config_.start.batch >= steps_per_epoch_)
        throw UsageError("data pipeline: start position epoch " + std::to_string(config_.start.epoch) + ", batch " +
                         std::to_string(config_.start.batch) + " is outside an epoch of " +
                         std::to_string(steps_per_epoch_) +
                         " batches (was the checkpoint written with another batch size or rank count?)");
    for (int i = 0; i <= config_.prefetch; ++i) {
        slots_.push_back(std::make_unique<Slot>());
        assign(*slots_.back(), i);
    }
    try {
        for (int i = 0; i < config_.threads; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {
        stop();
        throw;
    }
}

Pipeline::~Pipeline() { stop(); }

void Pipeline::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_available_.notify_all();
    batch_ready_.notify_all();
    for (std::thread& worker : workers_)
        if (worker.joinable()) worker.join();
    workers_.clear();
}

void Pipeline::assign(Slot& slot, std::int64_t sequence) {
    Position position = plan_.advance(config_.start, sequence);
    plan_.batch_indices(position, slot.indices);
    std::size_t count = slot.indices.size();
    slot.sequence = sequence;
    slot.batch.epoch = position.epoch;
    slot.batch.index_in_epoch = position.batch;
    slot.batch.size = static_cast<int>(count);
    slot.batch.image_size = config_.image_size;
    slot.batch.labels.assign(count, 0);
    // Both keep their capacity between batches.
    if (config_.raw_pixels)
        slot.batch.pixels.resize(count * image_values_);
    else
        slot.batch.images.resize(count * image_values_);
    slot.batch.statistics = statistics_;
    slot.good.assign(count, 0);
    slot.claimed = slot.finished = 0;
    slot.bad = 0;
    slot.problems.clear();
    slot.error = nullptr;
    slot.ready = false;
}

Pipeline::Slot* Pipeline::claimable_slot() {
    Slot* oldest = nullptr;
    for (auto& slot : slots_)
        if (!slot->ready && slot->claimed < slot->indices.size() && (!oldest || slot->sequence < oldest->sequence))
            oldest = slot.get();
    return oldest;
}

void Pipeline::work() {
    try {
        JpegDecoder decoder;
        RgbImage scratch;
        decode_samples(decoder, scratch);
    } catch (...) {
        // Out of memory or out of threads' resources: nothing this worker can skip past.
        std::lock_guard lock(mutex_);
        if (!failure_) failure_ = std::current_exception();
        batch_ready_.notify_all();
    }
}

void Pipeline::decode_samples(JpegDecoder& decoder, RgbImage& scratch) {
    std::unique_lock lock(mutex_);
    while (true) {
        Slot* slot = nullptr;
        work_available_.wait(lock, [&] { return stopping_ || (slot = claimable_slot()); });
        if (stopping_) return;
        std::size_t j = slot->claimed++;
        std::size_t index = slot->indices[j];
        auto epoch = static_cast<std::uint64_t>(slot->batch.epoch);
        // The slot cannot be reassigned before all its samples are finished and the trainer
        // has moved past it, so its buffers may be written without the lock.
        auto out = config_.raw_pixels
                       ? PixelOutput::raw(slot->batch.pixels.data() + j * image_values_)
                       : PixelOutput::normalised(slot->batch.images.data() + j * image_values_, statistics_);
        lock.unlock();

        int label = 0;
        std::string problem;
        std::exception_ptr failure;
        try {
            EncodedSample sample = config_.dataset->load(index);
            auto seed = mix_seed({config_.seed, epoch, index});
            auto transform = config_.augment ? config_.transform : TransformKind::evaluation;
            if (sample.encoding == SampleEncoding::grey)
                transform_grey(sample, transform, config_.image_size, seed, out);
            else
                transform_jpeg(sample.bytes, sample.source, transform, config_.image_size, seed, decoder, scratch, out);
            label = sample.label;
        } catch (const DataError& error) {
            problem = error.what();
        } catch (...) {
            failure = std::current_exception();  // not the data's fault: stop the run
        }

        lock.lock();
        if (failure) {
            if (!slot->error) slot->error = failure;
        } else if (!problem.empty()) {
            ++slot->bad;
            slot->problems.push_back(problem);
            if (config_.strict && !slot->error) slot->error = std::make_exception_ptr(DataError(problem));
        } else {
            slot->good[j] = 1;
            slot->batch.labels[j] = label;
        }
        if (++slot->finished == slot->indices.size()) finish(*slot);
    }
}

void Pipeline::finish(Slot& slot) {
    std::size_t count = slot.indices.size();
    if (!slot.error && slot.bad == static_cast<int>(count))
        slot.error = std::make_exception_ptr(
            DataError("batch " + std::to_string(slot.batch.index_in_epoch) + " of epoch " +
                      std::to_string(slot.batch.epoch) + " on rank " + std::to_string(config_.rank) + ": none of its " +
                      std::to_string(count) + " samples could be read (last: " + slot.problems.back() + ")"));
    slot.batch.stand_in.assign(count, 0);
    if (!slot.error && slot.bad > 0) {
        for (std::size_t j = 0; j < count; ++j) {
            if (slot.good[j]) continue;
            slot.batch.stand_in[j] = 1;
            std::size_t donor = (j + 1) % count;
            while (!slot.good[donor]) donor = (donor + 1) % count;
            auto copy = [&](auto& values) {
                std::copy_n(values.begin() + std::ptrdiff_t(donor * image_values_), image_values_,
                            values.begin() + std::ptrdiff_t(j * image_values_));
            };
            if (config_.raw_pixels)
                copy(slot.batch.pixels);
            else
                copy(slot.batch.images);
            slot.batch.labels[j] = slot.batch.labels[donor];
        }
    }
    slot.ready = true;
    batch_ready_.notify_all();
}

const Batch& Pipeline::next() {
    std::unique_lock lock(mutex_);
    const auto count = static_cast<std::int64_t>(slots_.size());
    if (holding_) {
        // The trainer is done with the previous batch: its slot prepares a future one.
        assign(*slots_[static_cast<std::size_t>((delivered_ - 1) % count)], delivered_ - 1 + count);
        holding_ = false;
        work_available_.notify_all();
    }
    Slot& slot = *slots_[static_cast<std::size_t>(delivered_ % count)];
    batch_ready_.wait(lock, [&] { return slot.ready || stopping_ || failure_; });
    if (stopping_) throw std::runtime_error("data pipeline: next() after stop()");
    if (failure_) std::rethrow_exception(failure_);
    if (slot.error) std::rethrow_exception(slot.error);
    samples_delivered_ += slot.batch.size - slot.bad;
    bad_samples_ += slot.bad;
    ++delivered_;
    holding_ = true;
    // Warned on delivery rather than when decoded, so that the warnings match the counters
    // and a sample is not reported for batches prepared ahead but never used.
    std::vector<std::string> problems = std::move(slot.problems);
    lock.unlock();
    for (const std::string& problem : problems) config_.warn("skipping bad sample: " + problem);
    return slot.batch;
}

Position Pipeline::position() const {
    std::lock_guard lock(mutex_);
    return plan_.advance(config_.start, delivered_);
}

PipelineCounters Pipeline::counters() const { return {samples_delivered_.load(), bad_samples_.load()}; }

}  // namespace trellis::data
