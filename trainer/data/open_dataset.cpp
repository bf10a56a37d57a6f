// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/open_dataset.hpp"

#include <filesystem>

#include "common/error.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/idx_dataset.hpp"
#include "trainer/data/image_folder.hpp"
#include "trainer/data/tfrecord_dataset.hpp"

namespace trellis::data {

Datasets open_datasets(const std::string& spec, const std::string& eval_glob) {
    Datasets sets;
    if (spec.starts_with("idx:")) {
        auto folder = spec.substr(4);
        if (!std::filesystem::is_directory(folder))
            throw DataSpecError(spec +
                                ": not a folder (expected DIR/train-images-idx3-ubyte[.gz] and "
                                "DIR/train-labels-idx1-ubyte[.gz])");
        auto train = std::make_shared<IdxDataset>(folder, "train");
        sets.train = train;
        if (std::filesystem::exists(idx_images_path(folder, "t10k"))) {
            auto eval = std::make_shared<IdxDataset>(folder, "t10k", train->num_classes());
            eval->use_statistics(train->statistics());
            sets.eval = eval;
        }
    } else if (spec.starts_with("tfrecord:")) {
        auto train_glob = spec.substr(9);
        auto train = std::make_shared<TfRecordDataset>(train_glob);
        sets.train = train;
        auto validation = eval_glob.empty() ? validation_glob_for(train_glob) : eval_glob;
        if (!validation.empty() && (!eval_glob.empty() || has_shards(validation))) {
            TfRecordDatasetOptions eval_options;
            eval_options.label_offset = train->label_offset();
            eval_options.num_classes = train->num_classes();
            sets.eval = std::make_shared<TfRecordDataset>(validation, eval_options);
        }
    } else {
        if (!std::filesystem::is_directory(spec))
            throw UsageError("--data " + spec + ": not a folder (expected synthetic, DIR, tfrecord:GLOB or idx:DIR)");
        // Fashion-MNIST's folder given without its scheme: say which one it takes.
        if (!std::filesystem::is_directory(std::filesystem::path(spec) / "train") &&
            std::filesystem::exists(idx_images_path(spec, "train")))
            throw DataSpecError(spec + " holds IDX files, not train/<class>/*.JPEG: use --data idx:" + spec);
        sets.train = std::make_shared<ImageFolderDataset>(spec, "train");
        if (std::filesystem::is_directory(std::filesystem::path(spec) / "val"))
            sets.eval = std::make_shared<ImageFolderDataset>(spec, "val");
    }
    return sets;
}

}  // namespace trellis::data
