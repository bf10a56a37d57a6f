// SPDX-License-Identifier: Apache-2.0
// Index files for TFRecord shards, so that a rank starting up reads one small file per shard
// instead of walking every record's framing (1.28 million seeks for ImageNet, on every rank,
// often over NFS). The format is DALI's tfrecord2idx: SHARD.idx beside SHARD, one line per
// record, "OFFSET SIZE" in decimal (SIZE counts the framing: 8 + 4 + data + 4 bytes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/data/tfrecord.hpp"

namespace trellis::data {

std::string index_path_for(const std::string& shard);

// The record offsets of SHARD from its index, when the index exists, is not older than the
// shard, and describes it exactly (offsets in order, each record where the previous one
// ended, the last one ending at the end of the file). Otherwise nothing, with the reason in
// `why_not` when an index exists but cannot be used.
std::optional<std::vector<std::uint64_t>> read_index(const std::string& shard, std::string& why_not);

// Writes SHARD.idx from a scan of SHARD, through a temporary file of this process renamed
// into place (so that several processes may write the same index at once). Throws DataError
// naming the file when it cannot, or when the scan found the shard damaged: an index must
// describe the whole file, or read_index would never take it.
void write_index(const std::string& shard, const TfRecordScan& scan);

}  // namespace trellis::data
