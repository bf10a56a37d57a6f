// SPDX-License-Identifier: Apache-2.0
// Which dataset samples make up each batch, on each rank. Epoch e visits the samples in a
// permutation drawn from (seed, e) (evaluation: in dataset order); rank r of W takes
// permutation positions r, r+W, r+2W, ..., and batch k of a rank is the k-th group of B of
// those. The composition of a batch depends on nothing else, which is what makes batches
// reproducible whatever the thread count, and a resumed run identical to an uninterrupted one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/data/batch.hpp"

namespace trellis::data {

// A uniformly random permutation of [0, count) from (seed, epoch) (Fisher-Yates).
std::vector<std::uint32_t> epoch_permutation(std::size_t count, std::uint64_t seed, std::int64_t epoch);

// The evaluation batches of rank `rank` of `world_size`: ceil(N_rank / B), where N_rank is its
// share of the samples (0 when it has none). Rank 0 has the most, and others at most one fewer.
std::int64_t evaluation_batches(std::size_t dataset_size, int batch_size, int rank, int world_size);

// A training position carried over to another batch geometry. Training batches of every rank
// together take the epoch's permutation in order: after k batches of B samples on each of W
// ranks, exactly the first k*B*W permuted samples have been seen, whatever W. So a position
// counted in batches of `from_samples` (B*W) becomes one counted in batches of `to_samples`
// (B'*W') at the first sample not yet seen, rounded up to a whole batch; `skipped` says how
// many samples of the epoch that passes over (0 when the sizes divide). When no whole batch
// of the epoch is left, it moves to the start of the next epoch.
struct CarriedPosition {
    Position position;
    std::int64_t skipped = 0;
};
CarriedPosition carry_position(Position position, std::int64_t from_samples, std::int64_t to_samples,
                               std::int64_t to_batches_per_epoch);

class BatchPlan {
public:
    // Training (`shuffle`): floor(N / (W * B)) full batches per epoch, the remainder dropped
    // so that every rank takes the same number of steps. Evaluation: every sample of the
    // rank once, ceil(N_rank / B) batches with a short last one; ranks may then differ by one
    // batch. Throws DataError when a rank would get no batch.
    BatchPlan(std::size_t dataset_size, int batch_size, int rank, int world_size, bool shuffle, std::uint64_t seed);

    std::int64_t batches_per_epoch() const { return batches_per_epoch_; }

    // The dataset indices of batch `batch` of `epoch`. Keeps the permutations of the last two
    // epochs asked for (batches being prepared can straddle an epoch boundary); not
    // thread-safe.
    void batch_indices(Position position, std::vector<std::size_t>& indices);

    // The position `count` batches after `start`.
    Position advance(Position start, std::int64_t count) const;

private:
    const std::vector<std::uint32_t>& permutation(std::int64_t epoch);

    std::size_t dataset_size_;
    int batch_size_, rank_, world_size_;
    bool shuffle_;
    std::uint64_t seed_;
    std::int64_t rank_samples_;
    std::int64_t batches_per_epoch_;
    struct CachedPermutation {
        std::int64_t epoch = -1;
        std::vector<std::uint32_t> order;
    };
    CachedPermutation cache_[2];
};

}  // namespace trellis::data
