// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/data_sources.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "common/error.hpp"
#include "trainer/data/batch_plan.hpp"
#include "trainer/data/open_dataset.hpp"
#include "trainer/data/pipeline.hpp"
#include "trainer/data/synthetic.hpp"
#include "trainer/data/tfrecord_dataset.hpp"

namespace trellis::train {

namespace {

std::unique_ptr<data::BatchSource> pipeline(const TrainOptions& options, std::shared_ptr<const data::Dataset> set,
                                            data::TransformKind transform, int image_size, int rank, int world_size,
                                            data::Position start, const Decoding& decoding) {
    data::PipelineConfig config;
    config.dataset = std::move(set);
    config.batch_size = options.batch_size;
    config.image_size = image_size;
    config.transform = transform;
    config.augment = options.augment;
    config.seed = options.seed;
    config.rank = rank;
    config.world_size = world_size;
    config.threads = decoding.threads;
    config.raw_pixels = decoding.raw_pixels;
    config.prefetch = options.prefetch;
    config.strict = options.strict_data;
    config.start = start;
    return std::make_unique<data::Pipeline>(config);
}

}  // namespace

Decoding decoding_for(const TrainOptions& options, bool on_gpu) {
    Decoding decoding;
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    decoding.threads = options.data_threads > 0 ? options.data_threads : on_gpu ? cpus : std::min(2, cpus);
    decoding.raw_pixels = options.pixels == Pixels::bytes || (options.pixels == Pixels::automatic && on_gpu);
    return decoding;
}

int write_tfrecord_indexes(const TrainOptions& options) {
    auto train = options.data.substr(std::string("tfrecord:").size());
    auto eval = options.eval_data.empty() ? data::validation_glob_for(train) : options.eval_data;
    auto say = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
    auto counts = data::write_missing_indexes(train, say);
    if (!eval.empty() && (!options.eval_data.empty() || data::has_shards(eval))) {
        auto more = data::write_missing_indexes(eval, say);
        counts.written += more.written, counts.damaged += more.damaged;
    }
    std::printf("%zu index files written", counts.written);
    if (counts.damaged > 0) std::printf(", %zu damaged shards left without one", counts.damaged);
    std::printf("; shards with a current index were left as they were\n");
    return 0;
}

DataSources open_data_sources(const TrainOptions& options, int image_size, int rank, int world_size) {
    DataSources sources;
    const auto& spec = options.data;
    if (spec == "synthetic") {
        sources.num_classes = options.num_classes.value_or(1000);
        sources.description = "synthetic";
        auto config = data::SyntheticConfig{
            options.batch_size, image_size, sources.num_classes, options.seed + std::uint64_t(rank), 1281167,
            world_size,         {}};
        sources.train_batches_per_epoch = config.steps_per_epoch();
        sources.open_train = [config](data::Position start, const Decoding&) mutable {
            config.start = start;
            return std::make_unique<data::SyntheticBatches>(config);
        };
        return sources;
    }
    auto sets = data::open_datasets(spec, options.eval_data);
    sources.train_set = sets.train;
    sources.eval_set = sets.eval;
    sources.num_classes = options.num_classes.value_or(sources.train_set->num_classes());
    if (sources.num_classes < sources.train_set->num_classes())
        throw UsageError("--num-classes " + std::to_string(sources.num_classes) + " is fewer than the " +
                         std::to_string(sources.train_set->num_classes()) + " classes of " +
                         sources.train_set->describe());
    sources.description = sources.train_set->describe();
    sources.train_batches_per_epoch =
        data::BatchPlan(sources.train_set->size(), options.batch_size, rank, world_size, true, options.seed)
            .batches_per_epoch();
    sources.open_train = [&options, set = sources.train_set, image_size, rank, world_size](data::Position start,
                                                                                           const Decoding& decoding) {
        return pipeline(options, set, data::TransformKind::training, image_size, rank, world_size, start, decoding);
    };
    if (sources.eval_set)
        sources.open_eval = [&options, set = sources.eval_set, image_size](int rank, int world,
                                                                           const Decoding& decoding) {
            return pipeline(options, set, data::TransformKind::evaluation, image_size, rank, world, {}, decoding);
        };
    return sources;
}

}  // namespace trellis::train
