// SPDX-License-Identifier: Apache-2.0
// The common layer: exit statuses by error kind, the value parsers and the option table.
#include "tests/catch.hpp"

#include <cstdlib>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/host.hpp"

using namespace trellis;

TEST_CASE("each kind of error has its exit status") {
    CHECK(exit_status(UsageError("bad")) == 2);
    CHECK(exit_status(Refused("no")) == 3);
    CHECK(exit_status(Error("broke")) == 1);
    CHECK(exit_status(std::runtime_error("other")) == 1);
    struct Derived : UsageError {
        using UsageError::UsageError;
    };
    CHECK(exit_status(Derived("a domain's bad input")) == 2);
}

TEST_CASE("whole numbers: the range, and a message naming the option and what is accepted") {
    CHECK(cli::parse_int<int>("42", "--n", 1, 100) == 42);
    CHECK(cli::parse_int<int>("-3", "--n", -5, 5) == -3);
    CHECK_THROWS_WITH(cli::parse_int<int>("0", "--n", 1, 100),
                      "invalid value '0' for --n (accepted: a whole number from 1 to 100)");
    CHECK_THROWS_WITH(cli::parse_int<int>("7x", "--n", 1), Catch::Contains("a whole number of at least 1"));
    CHECK_THROWS_AS(cli::parse_int<int>("", "--n", 0), UsageError);
    CHECK_THROWS_AS(cli::parse_int<int>("99999999999", "--n", 0), UsageError);
    CHECK(cli::parse_unsigned("18446744073709551615", "--seed") == 18446744073709551615ull);
    CHECK_THROWS_AS(cli::parse_unsigned("-1", "--seed"), UsageError);
}

TEST_CASE("real numbers and byte counts") {
    CHECK(cli::parse_real("0.5", "--lr", 0, true) == 0.5);
    CHECK_THROWS_WITH(cli::parse_real("0", "--lr", 0, true), Catch::Contains("a number above 0"));
    CHECK_THROWS_AS(cli::parse_real("nan", "--lr", 0), UsageError);
    CHECK_THROWS_AS(cli::parse_real("1", "--momentum", 0, false, 1), UsageError);
    CHECK(cli::parse_size("64K", "--sizes") == 65536);
    CHECK(cli::parse_size("3", "--sizes") == 3);
    CHECK(cli::parse_size("2G", "--sizes") == (std::size_t(2) << 30));
    CHECK_THROWS_WITH(cli::parse_size("1T", "--sizes"), Catch::Contains("optional K, M or G"));
    CHECK_THROWS_AS(cli::parse_size("0", "--sizes"), UsageError);
}

TEST_CASE("split keeps empty items, so that callers can refuse them") {
    CHECK(cli::split("a,b") == std::vector<std::string>{"a", "b"});
    CHECK(cli::split("a,,b") == std::vector<std::string>{"a", "", "b"});
    CHECK(cli::split("") == std::vector<std::string>{""});
    CHECK(cli::split("x:y", ':') == std::vector<std::string>{"x", "y"});
}

TEST_CASE("choices parse their names and list them when refusing") {
    enum class Colour { red, green };
    cli::Choices<Colour> colours{{{"red", Colour::red}, {"green", Colour::green}}};
    CHECK(colours.parse("green", "--colour") == Colour::green);
    CHECK(colours.name(Colour::red) == "red");
    CHECK_THROWS_WITH(colours.parse("blue", "--colour"), "invalid value 'blue' for --colour (accepted: red, green)");
}

TEST_CASE("the option table: both value forms, flags, the rest, refusals and generated help") {
    int count = 0;
    bool verbose = false;
    std::string name;
    cli::OptionTable table("prog --help");
    table.section("Options:")
        .value("--count", "N", "how many", [&](auto& v) { count = cli::parse_int(v, "--count", 0); })
        .value("--name", "NAME", "who\nsecond line", [&](auto& v) { name = v; })
        .flag("--verbose", "say more", [&] { verbose = true; });
    CHECK(table.parse({"--count", "3", "--name=x", "--verbose"}).empty());
    CHECK((count == 3 && name == "x" && verbose));
    CHECK(table.parse({"--name", "--verbose"}).empty());  // a value is never read as a flag
    CHECK(name == "--verbose");
    auto rest = table.parse({"--count", "1", "--", "cmd", "--count"}, cli::OptionTable::Rest::command);
    CHECK(rest == std::vector<std::string>{"cmd", "--count"});
    CHECK(table.parse({"cmd", "x"}, cli::OptionTable::Rest::command) == std::vector<std::string>{"cmd", "x"});
    CHECK_THROWS_WITH(table.parse({"--colour", "red"}), "unknown option '--colour' (see prog --help)");
    CHECK_THROWS_WITH(table.parse({"--count"}), "--count needs a value");
    CHECK_THROWS_WITH(table.parse({"--verbose=yes"}), "--verbose takes no value");
    CHECK_THROWS_WITH(table.parse({"stray"}), "unexpected argument 'stray'");
    CHECK(table.knows("--count"));
    CHECK_FALSE(table.knows("--colour"));
    CHECK(table.help() ==
          "Options:\n"
          "  --count N               how many\n"
          "  --name NAME             who\n"
          "                          second line\n"
          "  --verbose               say more\n");
}

TEST_CASE("the node name is Slurm's when slurmd gives one") {
    ::setenv("SLURMD_NODENAME", "n7", 1);
    CHECK(node_name() == "n7");
    ::unsetenv("SLURMD_NODENAME");
    CHECK(node_name() == host_name());
    ::setenv("SLURM_JOB_ID", "12", 1);
    ::setenv("SLURM_STEP_ID", "3", 1);
    CHECK(step_port(21000, 29999) == step_port(12, 3, 21000, 29999));
    CHECK(step_port(21000, 29999) >= 21000);
    CHECK(step_port(21000, 29999) <= 29871);
}

TEST_CASE("a step's port: within the range, the same on every node, different for the next step") {
    int port = step_port(4711, 0, 20000, 29999);
    CHECK(port >= 20000);
    CHECK(port + 128 <= 29999);
    CHECK(step_port(4711, 0, 20000, 29999) == port);
    CHECK(step_port(4711, 1, 20000, 29999) != port);
    CHECK(step_port(4712, 0, 20000, 29999) != port);
}
