// SPDX-License-Identifier: Apache-2.0
// CRC-32C (Castagnoli), the checksum of TFRecord framing, and the "masked" form TFRecord
// stores: a CRC of data that itself holds CRCs is weak, so TensorFlow rotates and offsets it.
#pragma once

#include <cstdint>

#include "trainer/data/bytes.hpp"

namespace trellis::data {

// CRC-32C of `data`; pass a previous result as `crc` to continue over more data
// (crc32c(a + b) == crc32c(b, crc32c(a))).
std::uint32_t crc32c(ByteView data, std::uint32_t crc = 0);

constexpr std::uint32_t tfrecord_mask_delta = 0xa282ead8u;

constexpr std::uint32_t mask_crc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + tfrecord_mask_delta; }

constexpr std::uint32_t unmask_crc(std::uint32_t masked) {
    std::uint32_t rotated = masked - tfrecord_mask_delta;
    return (rotated >> 17) | (rotated << 15);
}

inline std::uint32_t masked_crc32c(ByteView data) { return mask_crc(crc32c(data)); }

}  // namespace trellis::data
