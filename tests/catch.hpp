// SPDX-License-Identifier: Apache-2.0
// Catch2 through one header, whichever major version configure found (TRELLIS_CATCH2_MAJOR):
// Debian 12 ships Catch2 2, a single header; Debian 13 ships Catch2 3, whose string matchers
// moved to Catch::Matchers (Contains became ContainsSubstring) and whose Approx left the
// global namespace. The tests use the Catch2 2 names; for Catch2 3 they are provided here.
#pragma once

#if TRELLIS_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
    return Matchers::ContainsSubstring(text, sensitivity);
}
using Matchers::StartsWith;
}  // namespace Catch
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
