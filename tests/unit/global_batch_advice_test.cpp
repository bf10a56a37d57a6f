// SPDX-License-Identifier: Apache-2.0
// The advice on resuming a checkpoint whose global batch this run's ranks do not make.
#include "tests/catch.hpp"

#include "trainer/train/global_batch_advice.hpp"

using trellis::train::global_batch_advice;

TEST_CASE("a global batch the ranks divide: the per-rank options that make it") {
    CHECK(global_batch_advice(64, 4, "ranks") == "on 4 ranks: --batch-size 16, or --batch-size 8 --accumulate 2");
    CHECK(global_batch_advice(63, 3, "workers") == "on 3 workers: --batch-size 21");
}

TEST_CASE("a global batch the ranks do not divide: the nearest counts that do, and an example below") {
    CHECK(
        global_batch_advice(64, 3, "ranks") ==
        "64 is not divisible by 3 ranks: resume on 1, 2, 4, 8, 16 or 32 ranks with --batch-size x --accumulate = 64 / "
        "ranks (on 2: --batch-size 32, or --batch-size 16 --accumulate 2)");
    // 256 has nine divisors: the six nearest to 100 are listed (not 1, 2 or 256), and 64 is the example.
    CHECK(global_batch_advice(256, 100, "ranks") ==
          "256 is not divisible by 100 ranks: resume on 4, 8, 16, 32, 64 or 128 ranks with --batch-size x "
          "--accumulate = 256 / ranks (on 64: --batch-size 4, or --batch-size 2 --accumulate 2)");
    CHECK(global_batch_advice(7, 2, "ranks").find("resume on 1 or 7 ranks") != std::string::npos);
}
