// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/batch_plan.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "trainer/data/data_error.hpp"
#include "trainer/data/rng.hpp"

namespace trellis::data {

std::vector<std::uint32_t> epoch_permutation(std::size_t count, std::uint64_t seed, std::int64_t epoch) {
    std::vector<std::uint32_t> order(count);
    std::iota(order.begin(), order.end(), 0u);
    Rng rng(mix_seed({seed, 0x7065726d75746521ull, static_cast<std::uint64_t>(epoch)}));
    for (std::size_t i = count; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    return order;
}

namespace {

std::int64_t rank_share(std::size_t dataset_size, int rank, int world_size) {
    auto n = static_cast<std::int64_t>(dataset_size);
    return n > rank ? (n - rank + world_size - 1) / world_size : 0;
}

}  // namespace

std::int64_t evaluation_batches(std::size_t dataset_size, int batch_size, int rank, int world_size) {
    return (rank_share(dataset_size, rank, world_size) + batch_size - 1) / batch_size;
}

CarriedPosition carry_position(Position position, std::int64_t from_samples, std::int64_t to_samples,
                               std::int64_t to_batches_per_epoch) {
    std::int64_t seen = position.batch * from_samples;
    std::int64_t batch = (seen + to_samples - 1) / to_samples;
    if (batch >= to_batches_per_epoch)
        return {{position.epoch + 1, 0}, std::max<std::int64_t>(0, to_batches_per_epoch * to_samples - seen)};
    return {{position.epoch, batch}, batch * to_samples - seen};
}

BatchPlan::BatchPlan(std::size_t dataset_size, int batch_size, int rank, int world_size, bool shuffle,
                     std::uint64_t seed)
    : dataset_size_(dataset_size),
      batch_size_(batch_size),
      rank_(rank),
      world_size_(world_size),
      shuffle_(shuffle),
      seed_(seed) {
    if (batch_size <= 0 || world_size <= 0 || rank < 0 || rank >= world_size)
        throw DataError("batch plan: batch size " + std::to_string(batch_size) + ", rank " + std::to_string(rank) +
                        " of " + std::to_string(world_size) + " (expected batch size >= 1 and 0 <= rank < world size)");
    if (dataset_size > std::numeric_limits<std::uint32_t>::max())
        throw DataError("batch plan: " + std::to_string(dataset_size) + " samples (at most 2^32 - 1 supported)");
    auto n = static_cast<std::int64_t>(dataset_size);
    if (shuffle) {
        batches_per_epoch_ = n / (static_cast<std::int64_t>(world_size) * batch_size);
        rank_samples_ = batches_per_epoch_ * batch_size;
        if (batches_per_epoch_ == 0)
            throw DataError("the dataset has " + std::to_string(n) + " samples, fewer than one global batch (" +
                            std::to_string(world_size) + " ranks x " + std::to_string(batch_size) + ")");
    } else {
        rank_samples_ = rank_share(dataset_size, rank, world_size);
        batches_per_epoch_ = evaluation_batches(dataset_size, batch_size, rank, world_size);
        if (batches_per_epoch_ == 0)
            throw DataError("the evaluation set has " + std::to_string(n) + " samples, none for rank " +
                            std::to_string(rank) + " of " + std::to_string(world_size));
    }
}

const std::vector<std::uint32_t>& BatchPlan::permutation(std::int64_t epoch) {
    for (auto& cached : cache_)
        if (cached.epoch == epoch) return cached.order;
    // Replace the older of the two.
    CachedPermutation& slot = cache_[0].epoch < cache_[1].epoch ? cache_[0] : cache_[1];
    slot.epoch = epoch;
    slot.order = epoch_permutation(dataset_size_, seed_, epoch);
    return slot.order;
}

void BatchPlan::batch_indices(Position position, std::vector<std::size_t>& indices) {
    std::int64_t first = position.batch * batch_size_;
    std::int64_t count = std::min<std::int64_t>(batch_size_, rank_samples_ - first);
    indices.resize(static_cast<std::size_t>(count));
    const std::vector<std::uint32_t>* order = shuffle_ ? &permutation(position.epoch) : nullptr;
    for (std::int64_t j = 0; j < count; ++j) {
        auto slot = static_cast<std::size_t>((first + j) * world_size_ + rank_);
        indices[static_cast<std::size_t>(j)] = order ? (*order)[slot] : slot;
    }
}

Position BatchPlan::advance(Position start, std::int64_t count) const {
    std::int64_t total = start.batch + count;
    return {start.epoch + total / batches_per_epoch_, total % batches_per_epoch_};
}

}  // namespace trellis::data
