// SPDX-License-Identifier: Apache-2.0
// Byte buffers as the data layer passes them: owned (Bytes) and borrowed (ByteView).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace trellis::data {

using Bytes = std::vector<std::uint8_t>;
using ByteView = std::span<const std::uint8_t>;

inline ByteView as_bytes(std::string_view text) {
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

inline std::string_view as_text(ByteView bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

}  // namespace trellis::data
