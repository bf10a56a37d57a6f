// SPDX-License-Identifier: Apache-2.0
// Checkpoints: weights, batch-norm statistics, optimizer state, the step and the data position,
// in one file per save, written atomically (temporary file, fsync, rename, fsync of the
// folder) so that a preempted job never leaves a half-written checkpoint behind.
//
// File: "TRELLIS-CHECKPOINT 1\n", a little-endian u64 header length, a JSON header, the float
// arrays the header lists, and a CRC-32C of everything before it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "trainer/data/batch.hpp"
#include "trainer/nn/parameter_store.hpp"
#include "trainer/optim/optimizer.hpp"

namespace trellis::checkpoint {

struct CheckpointError : Error {
    using Error::Error;
    const char* topic() const override { return "checkpoint"; }
};

// The checkpoint's global batch is not this run's. Its number is kept for the trainer, which
// knows the ranks and can say which counts would meet it.
struct GlobalBatchMismatch : CheckpointError {
    GlobalBatchMismatch(const std::string& what, std::int64_t saved) : CheckpointError(what), saved(saved) {}
    std::int64_t saved;
};

struct CheckpointInfo {
    std::string model;
    int num_classes = 0;
    std::int64_t step = 0;  // steps completed
    data::Position next;    // where the data continues
    // The samples one batch of `next` stands for over all workers (per-worker batch x workers):
    // a run that resumes with another --accumulate counts batches of another size.
    // 0 in checkpoints written before it was recorded.
    std::int64_t batch_samples = 0;
    std::string optimizer;
    std::uint64_t seed = 0;
    int global_batch = 0;
    // The learning-rate schedule in words (optim::describe); a resume compares it with its
    // own. Empty in checkpoints written before it was recorded.
    std::string schedule;
    // fp16's dynamic loss scale and its finite steps (scale 0: none).
    float loss_scale = 0;
    std::int64_t loss_scale_steps = 0;

    // The run's history, so that a resumed run reports what the whole run did: its training
    // time so far (from the first step, over every segment), the segments (processes) so far,
    // the accuracy levels reached and when (the time-to-accuracy table), and the step of an
    // evaluation that a signal abandoned, to be redone on resuming (-1: none).
    // train_seconds is negative in checkpoints written before it was recorded.
    struct LevelReached {
        std::string metric;  // "top1" or "top5"
        double level = 0;
        std::int64_t step = 0;
        double seconds = 0;
    };
    double train_seconds = -1;
    int segment = 0;
    std::vector<LevelReached> levels;
    std::int64_t pending_eval = -1;
};

class CheckpointStore {
public:
    // Creates the folder when missing, and removes the temporary files of saves that a crash
    // cut short (a folder has one writer: rank 0, or one parameter server). Throws
    // CheckpointError when it cannot create the folder.
    explicit CheckpointStore(std::string folder, int keep = 3);

    // Writes checkpoint-<step>.trellis and removes all but the newest `keep`; returns its path.
    std::string save(const CheckpointInfo& info, nn::ParameterStore& parameters, optim::Optimizer& optimizer);

    // Loads the newest checkpoint that reads back whole (a damaged newer one is reported on
    // stderr and passed over). Empty when the folder holds none. A checkpoint of another
    // model, class count, optimizer, global batch (GlobalBatchMismatch) or seed is a
    // CheckpointError, and so is a malformed header.
    std::optional<CheckpointInfo> load_latest(const CheckpointInfo& expected, nn::ParameterStore& parameters,
                                              optim::Optimizer& optimizer);

    const std::string& folder() const { return folder_; }
    // The step of the newest checkpoint file in the folder, if any.
    std::optional<std::int64_t> newest_step() const;

private:
    std::string folder_;
    int keep_;
};

}  // namespace trellis::checkpoint
