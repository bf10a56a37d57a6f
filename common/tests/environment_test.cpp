// SPDX-License-Identifier: Apache-2.0
// The table of environment variables and man/trellis.7's ENVIRONMENT section name exactly the
// same variables, each once.
#include "tests/catch.hpp"

#include <fstream>
#include <set>
#include <string>

#include "common/environment.hpp"

namespace {

// The names of the section's ".TP" / ".B NAME" entries.
std::multiset<std::string> documented() {
    std::ifstream in(TRELLIS_SOURCE_DIR "/man/trellis.7");
    std::multiset<std::string> names;
    bool inside = false, term = false;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(".SH ")) inside = line == ".SH ENVIRONMENT";
        if (!inside) continue;
        if (term && line.starts_with(".B ")) names.insert(line.substr(3));
        term = line == ".TP";
    }
    return names;
}

}  // namespace

TEST_CASE("man/trellis.7 documents every variable of the table, and no other") {
    std::multiset<std::string> table;
    for (const auto* variable : trellis::env::all()) {
        table.insert(variable->name);
        CHECK(*variable->unset);
        CHECK(*variable->meaning);
    }
    auto man = documented();
    REQUIRE(!man.empty());
    for (const auto& name : table) {
        INFO(name);
        CHECK(table.count(name) == 1);
        CHECK(man.count(name) == 1);
    }
    for (const auto& name : man) {
        INFO(name << " is in man/trellis.7 but not in common/environment.hpp");
        CHECK(table.count(name) == 1);
    }
}
