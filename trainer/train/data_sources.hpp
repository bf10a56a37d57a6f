// SPDX-License-Identifier: Apache-2.0
// Turns --data into the training and evaluation batch sources: synthetic batches, an
// ImageNet folder tree, or TFRecord shards, sharded by rank.
#pragma once

#include <functional>
#include <memory>

#include "common/error.hpp"
#include "trainer/data/batch.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

// How the pipelines decode: with how many threads, and into bytes for the backend to
// normalise or into normalised floats.
struct Decoding {
    int threads = 2;
    bool raw_pixels = false;
};

struct DataSources {
    std::shared_ptr<const data::Dataset> train_set, eval_set;  // null for synthetic data
    int num_classes = 1000;
    std::string description;

    std::int64_t train_batches_per_epoch = 0;  // of each rank

    // A training source positioned at `start`.
    std::function<std::unique_ptr<data::BatchSource>(data::Position start, const Decoding&)> open_train;
    // One pass over rank `rank` of `world`'s shard of the evaluation set (null when there is
    // none, as for synthetic data).
    std::function<std::unique_ptr<data::BatchSource>(int rank, int world, const Decoding&)> open_eval;
};

// Opens the datasets (listing folders, indexing shards) so that a missing or empty dataset
// is reported before any training. Throws data::DataError or UsageError.
DataSources open_data_sources(const TrainOptions& options, int image_size, int rank, int world_size);

// How a run decodes, decided once the device is open (`on_gpu`). Threads: --data-threads when
// given; else, on a GPU, one per CPU of the affinity mask (the binding gives the rank its
// cores, and a GPU needs thousands of images per second); else at most 2, as they share the
// CPUs with the compute threads. Bytes (--pixels): by default on a GPU, which normalises them.
Decoding decoding_for(const TrainOptions& options, bool on_gpu);

// --write-index: SHARD.idx for the training shards and the evaluation shards (when they
// exist) that lack a current one; prints each file written and a summary. Returns 0.
int write_tfrecord_indexes(const TrainOptions& options);

}  // namespace trellis::train
