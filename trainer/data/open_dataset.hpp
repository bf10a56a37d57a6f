// The datasets a --data specification names, for trellis-train and trellis-bench data:
// DIR (an ImageNet folder tree; DIR/val for evaluation when present), tfrecord:GLOB (the
// evaluation shards are `eval_glob`, else GLOB with its last "train" replaced by
// "validation" when they exist) or idx:DIR (MNIST-style IDX files; the t10k pair for
// evaluation when present). "synthetic" has no dataset and is not accepted here.
#pragma once

#include <memory>
#include <string>

#include "trainer/data/dataset.hpp"

namespace trellis::data {

struct Datasets {
    std::shared_ptr<const Dataset> train;
    std::shared_ptr<const Dataset> eval;  // null when there is none
};

// Lists or reads the datasets. Throws UsageError for a specification that names nothing
// readable, DataError for a dataset that is missing, empty or malformed (naming it).
Datasets open_datasets(const std::string& spec, const std::string& eval_glob = "");

}  // namespace trellis::data
