// SPDX-License-Identifier: Apache-2.0
// A file opened for positional reads. pread(2) keeps no shared file position, so one open
// file can serve several loader threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trainer/data/bytes.hpp"

namespace trellis::data {

class ReadOnlyFile {
public:
    // Throws DataError "PATH: cannot open: REASON".
    explicit ReadOnlyFile(std::string path);
    ~ReadOnlyFile();
    ReadOnlyFile(const ReadOnlyFile&) = delete;
    ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

    // Reads up to `length` bytes at `offset`; fewer only at the end of the file.
    // Throws DataError naming the file and offset on an I/O error.
    std::size_t read_at(std::uint64_t offset, std::uint8_t* out, std::size_t length) const;

    std::uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

// The whole content of a file (an image). Throws DataError naming the file.
Bytes read_whole_file(const std::string& path);

}  // namespace trellis::data
