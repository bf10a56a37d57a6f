// SPDX-License-Identifier: Apache-2.0
// The IDX format of MNIST and Fashion-MNIST: two zero bytes, a type byte (0x08: unsigned
// bytes, the only type these datasets use), the number of dimensions, each dimension as a
// big-endian 32-bit count, then the values in row-major order. Files may be gzip-compressed
// (as Debian ships them); zlib reads both forms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trellis::data {

struct IdxArray {
    std::vector<std::uint32_t> dims;
    std::vector<std::uint8_t> values;  // the product of dims, row-major
};

// Reads PATH, which must hold `dimensions` dimensions of unsigned bytes. Throws DataError
// naming the file and what was expected for a missing file, a bad magic number, another
// value type or dimension count, or a file shorter (or longer) than its dimensions say.
IdxArray read_idx(const std::string& path, std::size_t dimensions);

}  // namespace trellis::data
