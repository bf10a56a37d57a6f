// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/tfrecord_index.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/host.hpp"
#include "trainer/data/data_error.hpp"

namespace trellis::data {

std::string index_path_for(const std::string& shard) { return shard + ".idx"; }

std::optional<std::vector<std::uint64_t>> read_index(const std::string& shard, std::string& why_not) {
    auto path = index_path_for(shard);
    struct stat shard_stat {
    }, index_stat{};
    if (::stat(path.c_str(), &index_stat) != 0) return std::nullopt;  // no index: not a problem
    if (::stat(shard.c_str(), &shard_stat) != 0) return std::nullopt;
    if (index_stat.st_mtime < shard_stat.st_mtime) {
        why_not = path + " is older than its shard";
        return std::nullopt;
    }
    std::ifstream in(path);
    std::vector<std::uint64_t> offsets;
    std::uint64_t offset = 0, size = 0, expected = 0;
    while (in >> offset >> size) {
        if (offset != expected || size < 16) {
            why_not = path + ": record " + std::to_string(offsets.size()) + " at byte " + std::to_string(offset) +
                      " of size " + std::to_string(size) + " (expected one at byte " + std::to_string(expected) +
                      " of at least 16 bytes)";
            return std::nullopt;
        }
        offsets.push_back(offset);
        expected = offset + size;
    }
    if (!in.eof()) {
        why_not = path + ": not lines of \"OFFSET SIZE\" after record " + std::to_string(offsets.size());
        return std::nullopt;
    }
    if (expected != std::uint64_t(shard_stat.st_size)) {
        why_not = path + " describes " + std::to_string(expected) + " bytes, the shard has " +
                  std::to_string(shard_stat.st_size);
        return std::nullopt;
    }
    return offsets;
}

namespace {

// Beside the index, hidden from shard globs, and one per process: every task of an srun may
// write the same index at once, and each renames a whole file into place.
std::string temporary_path_for(const std::string& path) {
    auto slash = path.find_last_of('/');
    auto folder = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    auto name = slash == std::string::npos ? path : path.substr(slash + 1);
    return folder + "." + name + "." + host_name() + "." + std::to_string(::getpid()) + ".tmp";
}

}  // namespace

void write_index(const std::string& shard, const TfRecordScan& scan) {
    if (!scan.damage.empty())
        throw DataError(shard + ": " + scan.damage + ": an index describes a whole shard, and this one is damaged");
    auto path = index_path_for(shard), temporary = temporary_path_for(path);
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out) throw DataError(temporary + ": cannot create: " + std::strerror(errno));
        for (std::size_t i = 0; i < scan.offsets.size(); ++i) {
            auto next = i + 1 < scan.offsets.size() ? scan.offsets[i + 1] : scan.file_size;
            out << scan.offsets[i] << ' ' << next - scan.offsets[i] << '\n';
        }
        if (!out.flush()) {
            ::unlink(temporary.c_str());
            throw DataError(temporary + ": write failed: " + std::strerror(errno));
        }
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        ::unlink(temporary.c_str());
        throw DataError(path + ": cannot rename into place: " + std::strerror(errno));
    }
}

}  // namespace trellis::data
