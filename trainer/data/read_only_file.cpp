// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/read_only_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trainer/data/data_error.hpp"

namespace trellis::data {

ReadOnlyFile::ReadOnlyFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw DataError(path_ + ": cannot open: " + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd_, &info) != 0) {
        int error = errno;
        ::close(fd_);
        throw DataError(path_ + ": cannot stat: " + std::strerror(error));
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd_);
        throw DataError(path_ + ": not a regular file");
    }
    size_ = static_cast<std::uint64_t>(info.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
    if (fd_ >= 0) ::close(fd_);
}

std::size_t ReadOnlyFile::read_at(std::uint64_t offset, std::uint8_t* out, std::size_t length) const {
    std::size_t done = 0;
    while (done < length) {
        ssize_t got = ::pread(fd_, out + done, length - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            throw DataError(path_ + ": read error at byte " + std::to_string(offset + done) + ": " +
                            std::strerror(errno));
        if (got == 0) break;
        done += static_cast<std::size_t>(got);
    }
    return done;
}

Bytes read_whole_file(const std::string& path) {
    ReadOnlyFile file(path);
    Bytes bytes(static_cast<std::size_t>(file.size()));
    std::size_t got = file.read_at(0, bytes.data(), bytes.size());
    if (got != bytes.size())
        throw DataError(path + ": file shrank while reading (" + std::to_string(got) + " of " +
                        std::to_string(bytes.size()) + " bytes)");
    return bytes;
}

}  // namespace trellis::data
