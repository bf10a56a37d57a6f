// SPDX-License-Identifier: Apache-2.0
// Paths to the fixtures the unit tests own, and to the shared real-machine topologies.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace trellis::test {

inline std::string source_dir() {
    const char* env = std::getenv("TRELLIS_SOURCE_DIR");
    return env ? env : TRELLIS_SOURCE_DIR;
}

inline std::string topology_fixture(const std::string& name) {
    return source_dir() + "/tests/fixtures/topology/" + name;
}

// ../shared/fixtures/topology beside the checkout, or TRELLIS_SHARED_FIXTURES.
inline std::string shared_topology_dir() {
    const char* env = std::getenv("TRELLIS_SHARED_FIXTURES");
    return env ? env : source_dir() + "/../shared/fixtures/topology";
}

// A scratch folder of the test's own, removed at the end of the test.
struct Scratch {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("trellis-test-" + std::to_string(::getpid()));
    Scratch() { std::filesystem::create_directories(path); }
    ~Scratch() { std::filesystem::remove_all(path); }
    // A folder inside, made with its parents; its canonical path.
    std::filesystem::path make(const std::string& relative) const {
        std::filesystem::create_directories(path / relative);
        return std::filesystem::canonical(path / relative);
    }
    // A file inside with this text; its path.
    std::string write(const std::string& relative, const std::string& text) const {
        std::filesystem::create_directories((path / relative).parent_path());
        std::ofstream(path / relative) << text;
        return (path / relative).string();
    }
};

}  // namespace trellis::test
