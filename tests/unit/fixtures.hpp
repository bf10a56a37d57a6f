// Paths to the fixtures the unit tests own, and to the shared real-machine topologies.
#pragma once

#include <cstdlib>
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

}  // namespace trellis::test
