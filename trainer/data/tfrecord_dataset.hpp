// SPDX-License-Identifier: Apache-2.0
// TFRecord shards in TensorFlow's ImageNet layout (train-00000-of-01024, ...,
// validation-00000-of-00128), one tf.Example per record. `--data tfrecord:GLOB` names the
// training shards; the validation shards come from a second glob, by default the training
// glob with "train" replaced by "validation".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainer/data/dataset.hpp"
#include "trainer/data/warning.hpp"

namespace trellis::data {

// The files that glob(3) matches, sorted, index files (*.idx) left out. Throws DataSpecError
// when none match, DataError when a folder of the pattern cannot be read.
std::vector<std::string> match_shards(const std::string& pattern);

// Whether glob(3) matches any file (no error when it does not).
bool has_shards(const std::string& pattern);

// "…/train-*" -> "…/validation-*": the last "train" in the pattern replaced. Empty when the
// pattern has no "train" (the caller must then be given the validation glob explicitly).
std::string validation_glob_for(const std::string& train_glob);

struct TfRecordDatasetOptions {
    // Subtracted from the stored label. TensorFlow's ImageNet records hold 1..1000, 0 being
    // "background", so the default is 1 unless a label 0 is seen in the label sample, which
    // means the records are 0-based. Give it explicitly for an evaluation set (use the
    // training set's) and whenever the detection could be fooled.
    int label_offset = -1;  // -1: detect
    // 0: the largest label in the label sample + 1 - label_offset.
    int num_classes = 0;
    // Labels are only inside the data, and reading all of ImageNet's 140 GB to index it is
    // not acceptable at start-up: detection reads at most this many records, spread evenly
    // over the index (all of them for small datasets).
    std::size_t label_sample = 1024;
    WarningSink warn;  // truncated shards; stderr when empty
};

// Writes SHARD.idx (see tfrecord_index.hpp) for every shard of the pattern that lacks a
// usable one, telling `say` in a line each file written and each damaged shard passed over
// (no index can describe it: its complete records are found from its framing at start-up).
struct IndexesWritten {
    std::size_t written = 0, damaged = 0;
};
IndexesWritten write_missing_indexes(const std::string& pattern, const std::function<void(const std::string&)>& say);

class TfRecordDataset : public Dataset {
public:
    // Matches the shards and indexes every complete record: from SHARD.idx when a current one
    // is there, else by walking the framing (length CRCs checked, data not read). A shard whose tail is truncated or whose framing breaks
    // is warned about with its file and byte offset; its records before that point are kept.
    // Throws DataSpecError when no shard matches, DataError when no shard holds a record.
    explicit TfRecordDataset(const std::string& glob_pattern, TfRecordDatasetOptions options = {});

    std::size_t size() const override { return records_.size(); }
    int num_classes() const override { return num_classes_; }
    // Reads the record (data CRC checked), parses the Example, and returns the image with
    // label - label_offset. A label outside [0, num_classes) is a DataError.
    EncodedSample load(std::size_t index) const override;
    std::string describe() const override;

    int label_offset() const { return label_offset_; }
    const std::vector<std::string>& shards() const { return shards_; }
    std::string source(std::size_t index) const;  // "SHARD:OFFSET"

private:
    struct RecordLocation {
        std::uint64_t offset;
        std::uint32_t shard;
    };
    void index_shard(std::uint32_t shard, const WarningSink& warn);
    void choose_labels(const TfRecordDatasetOptions& options, const WarningSink& warn);

    std::string pattern_;
    std::vector<std::string> shards_;
    std::vector<RecordLocation> records_;
    int label_offset_ = 1;
    int num_classes_ = 0;
    std::size_t indexed_shards_ = 0;  // read from their index files
};

}  // namespace trellis::data
