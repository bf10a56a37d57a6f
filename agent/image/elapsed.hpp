// SPDX-License-Identifier: Apache-2.0
// Seconds since a moment, for the imports' and the broadcast's progress lines: read by people.
#pragma once

#include <chrono>

namespace trellis::agent {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace trellis::agent
