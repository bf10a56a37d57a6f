// SPDX-License-Identifier: Apache-2.0
// --transport auto's vote for NCCL, summed as the ranks sum it (trainer/train/nccl_vote.hpp).
#include "tests/catch.hpp"

#include <string>
#include <vector>

#include "trainer/train/nccl_vote.hpp"

using namespace trellis::train;

namespace {

struct Rank {
    bool has_gpu;
    std::string why_not;  // empty: can use NCCL
    std::string host_and_gpu;
};

// Every rank's votes summed, then counted by `rank`.
NcclDecision vote(const std::vector<Rank>& ranks, int rank) {
    int size = int(ranks.size());
    std::vector<float> sums(2 * ranks.size() + 1, 0.0f);
    for (int r = 0; r < size; ++r) {
        auto votes = nccl_vote(size, r, ranks[r].has_gpu, ranks[r].why_not, ranks[r].host_and_gpu);
        for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += votes[i];
    }
    return count_nccl_votes(sums, rank, ranks[std::size_t(rank)].why_not);
}

}  // namespace

TEST_CASE("NCCL when every rank has a GPU of its own") {
    std::vector<Rank> ranks{
        {true, "", "n1 0000:3B:00.0"}, {true, "", "n1 0000:5E:00.0"}, {true, "", "n2 0000:3B:00.0"}};
    for (int r = 0; r < 3; ++r) CHECK(vote(ranks, r).use);
}

TEST_CASE("two ranks on one GPU take the host path, on every rank, saying which") {
    std::vector<Rank> ranks{{true, "", "n1 0000:3B:00.0"}, {true, "", "n1 0000:3B:00.0"}};
    for (int r = 0; r < 2; ++r) {
        auto decision = vote(ranks, r);
        CHECK_FALSE(decision.use);
        CHECK(decision.why_not == "ranks 0 and 1 share a GPU");
    }
}

TEST_CASE("a rank without a GPU or without NCCL keeps every rank on the host path") {
    std::vector<Rank> ranks{{true, "", "n1 0000:3B:00.0"}, {true, "libnccl.so.2: not found", ""}};
    CHECK(vote(ranks, 0).why_not == "rank 1 has no GPU or no NCCL");
    CHECK(vote(ranks, 1).why_not == "rank 1: libnccl.so.2: not found");
    CHECK_FALSE(vote(ranks, 0).use);
}

TEST_CASE("CPU ranks: nothing to explain") {
    std::vector<Rank> ranks{{false, "no GPU", ""}, {false, "no GPU", ""}};
    auto decision = vote(ranks, 0);
    CHECK_FALSE(decision.use);
    CHECK(decision.why_not.empty());
}
