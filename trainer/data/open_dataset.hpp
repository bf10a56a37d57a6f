// SPDX-License-Identifier: Apache-2.0
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

// Lists or reads the datasets. Throws UsageError (DataSpecError, naming the path) for a
// specification that names no dataset of its kind: missing, empty, in another layout or
// another format; DataError for a dataset that is there but damaged (naming the file).
Datasets open_datasets(const std::string& spec, const std::string& eval_glob = "");

}  // namespace trellis::data
