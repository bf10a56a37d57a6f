// SPDX-License-Identifier: Apache-2.0
// The one main() of every Catch2 test binary (written here rather than taken from Catch2, which
// provides it as CATCH_CONFIG_MAIN in version 2 and as the Catch2Main library in version 3).
#define CATCH_CONFIG_RUNNER
#include "tests/catch.hpp"

int main(int argc, char** argv) { return Catch::Session().run(argc, argv); }
