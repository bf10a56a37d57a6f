// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/tfrecord_dataset.hpp"

#include <glob.h>

#include <algorithm>
#include <limits>

#include "trainer/data/data_error.hpp"
#include "trainer/data/example.hpp"
#include "trainer/data/tfrecord.hpp"
#include "trainer/data/tfrecord_index.hpp"

namespace trellis::data {

std::vector<std::string> match_shards(const std::string& pattern) {
    glob_t matches{};
    int status = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    std::vector<std::string> shards;
    // Index files beside the shards (SHARD.idx, and a SHARD.idx.tmp being written) are not shards.
    if (status == 0)
        for (std::size_t i = 0; i < matches.gl_pathc; ++i)
            if (std::string path = matches.gl_pathv[i]; !path.ends_with(".idx") && !path.ends_with(".idx.tmp"))
                shards.push_back(path);
    ::globfree(&matches);
    if (status == GLOB_ABORTED) throw DataError("tfrecord:" + pattern + ": a folder of the pattern cannot be read");
    if (shards.empty())
        throw DataSpecError("tfrecord:" + pattern +
                            ": no file matches (expected TFRecord shards "
                            "such as /data/imagenet/train-*)");
    std::sort(shards.begin(), shards.end());
    return shards;
}

bool has_shards(const std::string& pattern) {
    try {
        return !match_shards(pattern).empty();
    } catch (const Error&) {  // none matches, or a folder of the pattern cannot be read
        return false;
    }
}

std::string validation_glob_for(const std::string& train_glob) {
    auto at = train_glob.rfind("train");
    if (at == std::string::npos) return {};
    return train_glob.substr(0, at) + "validation" + train_glob.substr(at + 5);
}

IndexesWritten write_missing_indexes(const std::string& pattern, const std::function<void(const std::string&)>& say) {
    IndexesWritten counts;
    for (const auto& shard : match_shards(pattern)) {
        std::string why_not;
        if (read_index(shard, why_not)) continue;
        auto scan = TfRecordReader(shard).scan_framing();
        if (!scan.damage.empty()) {
            say(shard + ": " + scan.damage + ": no index written (its " + std::to_string(scan.offsets.size()) +
                " complete records are found from its framing at start-up)");
            ++counts.damaged;
            continue;
        }
        write_index(shard, scan);
        say("wrote " + index_path_for(shard) + (why_not.empty() ? "" : " (replacing one that " + why_not + ")"));
        ++counts.written;
    }
    return counts;
}

TfRecordDataset::TfRecordDataset(const std::string& glob_pattern, TfRecordDatasetOptions options)
    : pattern_(glob_pattern), shards_(match_shards(glob_pattern)) {
    const WarningSink& warn = or_stderr(options.warn);
    for (std::uint32_t shard = 0; shard < shards_.size(); ++shard) index_shard(shard, warn);
    if (records_.empty())
        throw DataError("tfrecord:" + pattern_ + ": the " + std::to_string(shards_.size()) +
                        " matching files hold no complete record");
    choose_labels(options, warn);
}

void TfRecordDataset::index_shard(std::uint32_t shard, const WarningSink& warn) {
    std::string why_not;
    if (auto offsets = read_index(shards_[shard], why_not)) {
        for (std::uint64_t offset : *offsets) records_.push_back({offset, shard});
        ++indexed_shards_;
        return;
    }
    if (!why_not.empty()) warn(why_not + ": reading the shard's framing instead");
    TfRecordScan scan = TfRecordReader(shards_[shard]).scan_framing();
    for (std::uint64_t offset : scan.offsets) records_.push_back({offset, shard});
    if (!scan.damage.empty())
        warn(scan.damage + "; keeping the " + std::to_string(scan.offsets.size()) + " complete records before byte " +
             std::to_string(scan.damage_offset) + ", skipping the last " +
             std::to_string(scan.file_size - scan.damage_offset) + " bytes");
}

void TfRecordDataset::choose_labels(const TfRecordDatasetOptions& options, const WarningSink& warn) {
    std::int64_t smallest = 0, largest = 0;
    if (options.label_offset < 0 || options.num_classes <= 0) {
        std::size_t count = std::min(records_.size(), std::max<std::size_t>(options.label_sample, 1));
        smallest = std::numeric_limits<std::int64_t>::max();
        largest = std::numeric_limits<std::int64_t>::min();
        std::size_t parsed = 0;
        for (std::size_t i = 0; i < count; ++i) {
            std::size_t index = i * records_.size() / count;
            const RecordLocation& where = records_[index];
            try {
                Bytes record = TfRecordReader(shards_[where.shard]).read_at(where.offset);
                std::int64_t label = parse_image_example(record, source(index)).label;
                smallest = std::min(smallest, label);
                largest = std::max(largest, label);
                ++parsed;
            } catch (const DataError& error) {
                // The pipeline will skip this record too; one bad record must not stop the run.
                warn(std::string(error.what()) + " (while sampling labels)");
            }
        }
        if (parsed == 0)
            throw DataError("tfrecord:" + pattern_ + ": none of the " + std::to_string(count) +
                            " records sampled for their labels could be read");
        if (smallest < 0)
            throw DataError("tfrecord:" + pattern_ + ": negative label " + std::to_string(smallest) +
                            " (expected 1..N, or 0..N-1)");
    }
    label_offset_ = options.label_offset >= 0 ? options.label_offset : (smallest == 0 ? 0 : 1);
    num_classes_ = options.num_classes > 0 ? options.num_classes : static_cast<int>(largest + 1 - label_offset_);
    if (num_classes_ <= 0)
        throw DataError("tfrecord:" + pattern_ + ": labels up to " + std::to_string(largest) +
                        " leave no class with label offset " + std::to_string(label_offset_));
}

std::string TfRecordDataset::source(std::size_t index) const {
    const RecordLocation& where = records_[index];
    return shards_[where.shard] + ":" + std::to_string(where.offset);
}

EncodedSample TfRecordDataset::load(std::size_t index) const {
    // A shard is opened per sample rather than kept open: ImageNet has 1024 + 128 shards,
    // more than the usual 1024 descriptors per process, and open(2) costs microseconds
    // against milliseconds of JPEG decoding.
    const RecordLocation& where = records_[index];
    std::string name = source(index);
    Bytes record = TfRecordReader(shards_[where.shard]).read_at(where.offset);
    ImageExample example = parse_image_example(record, name);
    std::int64_t label = example.label - label_offset_;
    if (label < 0 || label >= num_classes_)
        throw DataError(name + ": label " + std::to_string(example.label) + " minus offset " +
                        std::to_string(label_offset_) + " is outside [0, " + std::to_string(num_classes_) + ")");
    return {std::move(example.encoded), static_cast<int>(label), std::move(name)};
}

std::string TfRecordDataset::describe() const {
    return "tfrecord:" + pattern_ + ": " + std::to_string(shards_.size()) + " shards, " +
           std::to_string(records_.size()) + " records, " + std::to_string(num_classes_) + " classes (label offset " +
           std::to_string(label_offset_) + "; " + std::to_string(indexed_shards_) + " shards indexed by .idx files)";
}

}  // namespace trellis::data
