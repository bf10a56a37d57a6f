// SPDX-License-Identifier: Apache-2.0
// A --log-dir file: created with its folder, appended to, a cut line closed, errors naming the path.
#include "tests/catch.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/log_file.hpp"

using namespace trellis;

namespace {

std::string contents(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("a log file: its folder created, appended to, a line cut short closed first") {
    auto root = std::filesystem::temp_directory_path() / ("trellis-log-file-test." + std::to_string(::getpid()));
    auto folder = root / "a" / "b";
    {
        auto log = open_log_file(folder.string(), "x.jsonl");
        log << "{\"n\":1}\n";
    }
    {
        auto log = open_log_file(folder.string(), "x.jsonl");
        log << "{\"n\":2";  // killed mid-line
    }
    {
        auto log = open_log_file(folder.string(), "x.jsonl");
        log << "{\"n\":3}\n";
    }
    CHECK(contents(folder / "x.jsonl") == "{\"n\":1}\n{\"n\":2\n{\"n\":3}\n");
    std::filesystem::remove_all(root);
}

TEST_CASE("a log folder that cannot be made or written is named with the reason") {
    CHECK_THROWS_WITH(open_log_file("/proc/trellis-no-such", "x.jsonl"),
                      Catch::StartsWith("--log-dir: cannot create /proc/trellis-no-such: "));
    CHECK_THROWS_WITH(open_log_file("/proc/self", "x.jsonl"),
                      Catch::StartsWith("--log-dir: cannot write /proc/self/x.jsonl: "));
}
