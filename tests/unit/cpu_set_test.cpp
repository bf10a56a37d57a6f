// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include "common/error.hpp"
#include "topology/cpu_set.hpp"

using trellis::topology::CpuSet;

TEST_CASE("CPU lists parse and print in the kernel's syntax") {
    CHECK(CpuSet::parse("0-3,8,10-11").to_string() == "0-3,8,10-11");
    CHECK(CpuSet::parse("3,2,1,0").to_string() == "0-3");
    CHECK(CpuSet::parse("5").size() == 1);
    CHECK(CpuSet::parse("").empty());
    CHECK(CpuSet{}.to_string().empty());
}

TEST_CASE("bad CPU lists are refused with the bad part named") {
    CHECK_THROWS_WITH(CpuSet::parse("0-x"), Catch::Contains("'x' is not a CPU number"));
    CHECK_THROWS_WITH(CpuSet::parse("4-2"), Catch::Contains("runs backwards"));
    CHECK_THROWS_AS(CpuSet::parse("1,,2"), trellis::UsageError);
    CHECK_THROWS_AS(CpuSet::parse("-1"), trellis::UsageError);
    CHECK_THROWS_AS(CpuSet::parse("99999999"), trellis::UsageError);
}

TEST_CASE("set operations") {
    CpuSet a = CpuSet::parse("0-7"), b = CpuSet::parse("4-11");
    CHECK((a & b).to_string() == "4-7");
    CHECK((a | b).to_string() == "0-11");
    CHECK((a - b).to_string() == "0-3");
    CHECK(a.intersects(b));
    CHECK_FALSE(CpuSet::parse("0-3").intersects(CpuSet::parse("4-7")));
    CHECK(a.contains(CpuSet::parse("2-5")));
    CHECK_FALSE(a.contains(b));
    CHECK(a.first() == 0);
    CHECK(CpuSet{}.first() == -1);
}
