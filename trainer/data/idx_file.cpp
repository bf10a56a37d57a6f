// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/idx_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "trainer/data/data_error.hpp"

namespace trellis::data {

namespace {

using GzFile = std::unique_ptr<gzFile_s, decltype(&gzclose)>;

// Reads exactly `size` bytes, or as many as there are: the count read.
std::size_t read_some(gzFile file, void* data, std::size_t size, const std::string& path) {
    std::size_t done = 0;
    while (done < size) {
        auto chunk = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
        int n = gzread(file, static_cast<char*>(data) + done, chunk);
        if (n < 0) {
            int code = 0;
            const char* message = gzerror(file, &code);
            throw DataError(path + ": cannot read: " + (code == Z_ERRNO ? std::strerror(errno) : message));
        }
        if (n == 0) break;
        done += std::size_t(n);
    }
    return done;
}

}  // namespace

IdxArray read_idx(const std::string& path, std::size_t dimensions) {
    GzFile file(gzopen(path.c_str(), "rb"), &gzclose);
    if (!file) throw DataError(path + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
    gzbuffer(file.get(), 1 << 20);
    std::uint8_t magic[4];
    if (read_some(file.get(), magic, 4, path) != 4 || magic[0] != 0 || magic[1] != 0)
        throw DataError(path + ": not an IDX file (expected the magic number 0x0000TTDD)");
    if (magic[2] != 0x08) {
        char type[8];
        std::snprintf(type, sizeof type, "0x%02X", magic[2]);
        throw DataError(path + ": values of type " + type + ", expected 0x08 (unsigned bytes)");
    }
    if (magic[3] != dimensions)
        throw DataError(path + ": " + std::to_string(magic[3]) + " dimensions, expected " + std::to_string(dimensions));
    IdxArray array;
    std::size_t count = 1;
    for (std::size_t d = 0; d < dimensions; ++d) {
        std::uint8_t bytes[4];
        if (read_some(file.get(), bytes, 4, path) != 4) throw DataError(path + ": truncated in its header");
        std::uint32_t size =
            std::uint32_t(bytes[0]) << 24 | std::uint32_t(bytes[1]) << 16 | std::uint32_t(bytes[2]) << 8 | bytes[3];
        if (size == 0 || count > (std::size_t(1) << 34) / size)
            throw DataError(path + ": dimension " + std::to_string(d) + " is " + std::to_string(size) +
                            " (expected 1 or more, and at most 16 GiB in all)");
        array.dims.push_back(size);
        count *= size;
    }
    array.values.resize(count);
    std::size_t got = read_some(file.get(), array.values.data(), count, path);
    if (got != count)
        throw DataError(path + ": truncated: " + std::to_string(got) + " of the " + std::to_string(count) +
                        " values its header announces");
    std::uint8_t extra;
    if (read_some(file.get(), &extra, 1, path) != 0)
        throw DataError(path + ": longer than the " + std::to_string(count) + " values its header announces");
    return array;
}

}  // namespace trellis::data
