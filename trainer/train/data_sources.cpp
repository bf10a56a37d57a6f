#include "trainer/train/data_sources.hpp"

#include <filesystem>
#include <stdexcept>

#include "common/error.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/idx_dataset.hpp"
#include "trainer/data/image_folder.hpp"
#include "trainer/data/pipeline.hpp"
#include "trainer/data/synthetic.hpp"
#include "trainer/data/tfrecord_dataset.hpp"

namespace trellis::train {

namespace {

std::unique_ptr<data::BatchSource> pipeline(const TrainOptions& options, std::shared_ptr<const data::Dataset> set,
                                            data::TransformKind transform, int image_size, int rank, int world_size,
                                            data::Position start) {
    data::PipelineConfig config;
    config.dataset = std::move(set);
    config.batch_size = options.batch_size;
    config.image_size = image_size;
    config.transform = transform;
    config.augment = options.augment;
    config.seed = options.seed;
    config.rank = rank;
    config.world_size = world_size;
    config.threads = options.data_threads;
    config.prefetch = options.prefetch;
    config.strict = options.strict_data;
    config.start = start;
    return std::make_unique<data::Pipeline>(config);
}

bool has_shards(const std::string& pattern) {
    try {
        return !data::match_shards(pattern).empty();
    } catch (const data::DataError&) {
        return false;
    }
}

}  // namespace

DataSources open_data_sources(const TrainOptions& options, int image_size, int rank, int world_size) {
    DataSources sources;
    const auto& spec = options.data;
    if (spec == "synthetic") {
        sources.num_classes = options.num_classes.value_or(1000);
        sources.description = "synthetic";
        auto config = data::SyntheticConfig{options.batch_size, image_size, sources.num_classes,
                                            options.seed + std::uint64_t(rank), 1281167, world_size, {}};
        sources.open_train = [config](data::Position start) mutable {
            config.start = start;
            return std::make_unique<data::SyntheticBatches>(config);
        };
        return sources;
    }
    if (spec.starts_with("idx:")) {
        auto folder = spec.substr(4);
        auto train = std::make_shared<data::IdxDataset>(folder, "train");
        sources.train_set = train;
        if (std::filesystem::exists(data::idx_images_path(folder, "t10k"))) {
            auto eval = std::make_shared<data::IdxDataset>(folder, "t10k", train->num_classes());
            eval->use_statistics(train->statistics());
            sources.eval_set = eval;
        }
    } else if (spec.rfind("tfrecord:", 0) == 0) {
        auto train_glob = spec.substr(9);
        auto train = std::make_shared<data::TfRecordDataset>(train_glob);
        sources.train_set = train;
        auto eval_glob = options.eval_data.empty() ? data::validation_glob_for(train_glob) : options.eval_data;
        if (!eval_glob.empty() && (!options.eval_data.empty() || has_shards(eval_glob))) {
            data::TfRecordDatasetOptions eval_options;
            eval_options.label_offset = train->label_offset();
            eval_options.num_classes = train->num_classes();
            sources.eval_set = std::make_shared<data::TfRecordDataset>(eval_glob, eval_options);
        }
    } else {
        if (!std::filesystem::is_directory(spec))
            throw UsageError("--data " + spec + ": not a folder (expected synthetic, DIR, tfrecord:GLOB or idx:DIR)");
        sources.train_set = std::make_shared<data::ImageFolderDataset>(spec, "train");
        if (std::filesystem::is_directory(std::filesystem::path(spec) / "val"))
            sources.eval_set = std::make_shared<data::ImageFolderDataset>(spec, "val");
    }
    sources.num_classes = options.num_classes.value_or(sources.train_set->num_classes());
    if (sources.num_classes < sources.train_set->num_classes())
        throw UsageError("--num-classes " + std::to_string(sources.num_classes) + " is fewer than the " +
                                    std::to_string(sources.train_set->num_classes()) + " classes of " +
                                    sources.train_set->describe());
    sources.description = sources.train_set->describe();
    sources.open_train = [&options, set = sources.train_set, image_size, rank, world_size](data::Position start) {
        return pipeline(options, set, data::TransformKind::training, image_size, rank, world_size, start);
    };
    if (sources.eval_set)
        sources.open_eval = [&options, set = sources.eval_set, image_size](int rank, int world) {
            return pipeline(options, set, data::TransformKind::evaluation, image_size, rank, world, {});
        };
    return sources;
}

}  // namespace trellis::train
