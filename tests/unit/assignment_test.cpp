// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include "topology/assignment.hpp"

using trellis::topology::assign_items;
using trellis::topology::assign_items_in_runs;
using Groups = std::vector<std::vector<int>>;

TEST_CASE("as many tasks as items: task i gets item i") { CHECK(assign_items(4, 4) == Groups{{0}, {1}, {2}, {3}}); }

TEST_CASE("fewer tasks: contiguous groups, larger first, sizes differ by at most one") {
    CHECK(assign_items(2, 8) == Groups{{0, 1, 2, 3}, {4, 5, 6, 7}});
    CHECK(assign_items(3, 8) == Groups{{0, 1, 2}, {3, 4, 5}, {6, 7}});
    CHECK(assign_items(1, 3) == Groups{{0, 1, 2}});
}

TEST_CASE("more tasks: blocked, task i gets floor(i * N / T)") {
    CHECK(assign_items(4, 2) == Groups{{0}, {0}, {1}, {1}});
    CHECK(assign_items(5, 2) == Groups{{0}, {0}, {0}, {1}, {1}});
    CHECK(assign_items(3, 1) == Groups{{0}, {0}, {0}});
}

TEST_CASE("no items: every task gets an empty group") { CHECK(assign_items(2, 0) == Groups{{}, {}}); }

TEST_CASE("groups within runs: tasks shared out by run size, no group across runs") {
    std::vector<int> two_sockets{0, 0, 0, 0, 1, 1, 1, 1};
    CHECK(assign_items_in_runs(3, two_sockets) == Groups{{0, 1}, {2, 3}, {4, 5, 6, 7}});
    CHECK(assign_items_in_runs(2, two_sockets) == Groups{{0, 1, 2, 3}, {4, 5, 6, 7}});
    CHECK(assign_items_in_runs(4, two_sockets) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
    CHECK(assign_items_in_runs(5, {0, 0, 0, 0, 0, 0, 1, 1}) == Groups{{0, 1}, {2, 3}, {4}, {5}, {6, 7}});
    // Fewer tasks than runs, or a task per item: the plain rule.
    CHECK(assign_items_in_runs(1, two_sockets) == Groups{{0, 1, 2, 3, 4, 5, 6, 7}});
    CHECK(assign_items_in_runs(8, two_sockets) == assign_items(8, 8));
}
