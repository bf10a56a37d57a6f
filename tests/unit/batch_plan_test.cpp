// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "trainer/data/batch_plan.hpp"
#include "trainer/data/data_error.hpp"

using namespace trellis::data;

TEST_CASE("epoch permutations are permutations, fixed by seed and epoch") {
    std::vector<std::uint32_t> a = epoch_permutation(1000, 5, 0);
    std::vector<std::uint32_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::uint32_t> identity(1000);
    std::iota(identity.begin(), identity.end(), 0u);
    CHECK(sorted == identity);
    CHECK(a == epoch_permutation(1000, 5, 0));
    CHECK(a != epoch_permutation(1000, 5, 1));
    CHECK(a != epoch_permutation(1000, 6, 0));
    CHECK(a != identity);
}

TEST_CASE("training: ranks take interleaved positions, the remainder is dropped") {
    // 103 samples, 2 ranks, batch 10: 5 steps, 3 samples unused per epoch.
    BatchPlan rank0(103, 10, 0, 2, true, 42), rank1(103, 10, 1, 2, true, 42);
    CHECK(rank0.batches_per_epoch() == 5);
    std::vector<std::uint32_t> order = epoch_permutation(103, 42, 3);
    std::vector<std::size_t> indices;
    rank1.batch_indices({3, 2}, indices);
    REQUIRE(indices.size() == 10);
    for (std::size_t j = 0; j < 10; ++j) CHECK(indices[j] == order[(20 + j) * 2 + 1]);

    std::set<std::size_t> seen;
    for (BatchPlan* plan : {&rank0, &rank1})
        for (std::int64_t k = 0; k < 5; ++k) {
            plan->batch_indices({3, k}, indices);
            for (std::size_t index : indices) CHECK(seen.insert(index).second);
        }
    CHECK(seen.size() == 100);
}

TEST_CASE("evaluation: dataset order, every sample once, a short last batch") {
    BatchPlan rank0(25, 4, 0, 2, false, 0), rank1(25, 4, 1, 2, false, 0);
    CHECK(rank0.batches_per_epoch() == 4);  // 13 samples: 4 + 4 + 4 + 1
    CHECK(rank1.batches_per_epoch() == 3);  // 12 samples
    std::vector<std::size_t> indices;
    rank0.batch_indices({0, 3}, indices);
    CHECK(indices == std::vector<std::size_t>{24});
    rank1.batch_indices({7, 0}, indices);
    CHECK(indices == std::vector<std::size_t>{1, 3, 5, 7});
}

TEST_CASE("positions advance across epochs") {
    BatchPlan plan(100, 10, 0, 1, true, 0);
    CHECK(plan.advance({0, 0}, 0) == Position{0, 0});
    CHECK(plan.advance({0, 7}, 3) == Position{1, 0});
    CHECK(plan.advance({2, 9}, 25) == Position{5, 4});
}

TEST_CASE("a position carried to another batch size continues at the first sample not seen") {
    // Batches of 4 on 2 ranks (8 samples a step) against 2 on 2 ranks (another --accumulate):
    // batch 5 of the first starts where batch 10 of the second does, on every rank.
    BatchPlan eights(100, 4, 0, 2, true, 3), fours(100, 2, 0, 2, true, 3);
    auto carried = carry_position({1, 5}, 8, 4, fours.batches_per_epoch());
    CHECK(carried.position == Position{1, 10});
    CHECK(carried.skipped == 0);
    std::vector<std::size_t> big, small;
    eights.batch_indices({1, 5}, big);
    fours.batch_indices(carried.position, small);
    CHECK(small == std::vector<std::size_t>(big.begin(), big.begin() + 2));

    // 32 samples seen, batches of 12: the next whole batch starts at 36, passing over 4.
    carried = carry_position({0, 4}, 8, 12, 8);
    CHECK(carried.position == Position{0, 3});
    CHECK(carried.skipped == 4);
    // No whole batch left in the epoch: the next one starts.
    CHECK(carry_position({0, 24}, 4, 8, 12).position == Position{1, 0});
    carried = carry_position({0, 23}, 4, 8, 12);
    CHECK(carried.position == Position{1, 0});
    CHECK(carried.skipped == 4);
}

TEST_CASE("a dataset smaller than one global batch is refused") {
    CHECK_THROWS_WITH(BatchPlan(15, 8, 0, 2, true, 0), Catch::Contains("fewer than one global batch"));
    CHECK_THROWS_AS(BatchPlan(1, 8, 1, 2, false, 0), DataError);
    CHECK_THROWS_AS(BatchPlan(100, 8, 2, 2, true, 0), DataError);
}
