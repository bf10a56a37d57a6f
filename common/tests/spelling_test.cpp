// SPDX-License-Identifier: Apache-2.0
// "Did you mean": typing slips are near, other names are not suggested.
#include "tests/catch.hpp"

#include "common/cli.hpp"
#include "common/spelling.hpp"

using namespace trellis;

TEST_CASE("typing distance counts insertions, deletions, replacements and swaps of neighbours") {
    CHECK(cli::typing_distance("--batch-size", "--batch-size") == 0);
    CHECK(cli::typing_distance("--bach-size", "--batch-size") == 1);    // dropped
    CHECK(cli::typing_distance("--batchh-size", "--batch-size") == 1);  // inserted
    CHECK(cli::typing_distance("--batch-sise", "--batch-size") == 1);   // replaced
    CHECK(cli::typing_distance("--btach-size", "--batch-size") == 1);   // swapped
    CHECK(cli::typing_distance("", "abc") == 3);
    CHECK(cli::typing_distance("colour", "count") == 4);
}

TEST_CASE("the nearest name is suggested only within about one slip per five letters") {
    std::vector<std::string> known{"--batch-size", "--lr", "--steps", "--nproc-per-node", "--transport"};
    CHECK(cli::nearest_name("--bach-size", known) == "--batch-size");
    CHECK(cli::nearest_name("--step", known) == "--steps");
    CHECK(cli::nearest_name("--lt", known) == "--lr");
    CHECK(cli::nearest_name("--transprot", known) == "--transport");
    CHECK_FALSE(cli::nearest_name("--frobnicate", known));
    CHECK(cli::nearest_name("--ls", std::vector<std::string>{"--lr", "--ws"}) == "--lr");  // the first of equals
    CHECK_FALSE(cli::nearest_name("--xy", known));                                         // two slips in two letters
    CHECK_FALSE(cli::nearest_name("--nprocs", known));
}

TEST_CASE("an unknown option is refused with the nearest known one") {
    cli::OptionTable table("prog --help");
    table.value("--batch-size", "B", "images", [](auto&) {}).flag("--verbose", "say more", [] {});
    CHECK_THROWS_WITH(table.parse({"--bach-size", "3"}),
                      "unknown option '--bach-size': did you mean --batch-size? (see prog --help)");
    CHECK_THROWS_WITH(table.parse({"--verbos"}),
                      "unknown option '--verbos': did you mean --verbose? (see prog --help)");
    CHECK_THROWS_WITH(table.parse({"--bach-size=3"}), Catch::Contains("did you mean --batch-size?"));
    CHECK_THROWS_WITH(table.parse({"--colour"}), "unknown option '--colour' (see prog --help)");
}
