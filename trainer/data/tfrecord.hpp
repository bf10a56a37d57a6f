// SPDX-License-Identifier: Apache-2.0
// TFRecord files: a sequence of records, each framed as
//   uint64 length (little endian)
//   uint32 masked crc32c of the 8 length bytes
//   data
//   uint32 masked crc32c of the data
// The length has its own CRC so that a reader can skip from record to record, checking the
// framing, without reading the data (this is how datasets build their index).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "trainer/data/bytes.hpp"
#include "trainer/data/read_only_file.hpp"

namespace trellis::data {

constexpr std::size_t tfrecord_header_size = 12;  // length + its masked CRC
constexpr std::size_t tfrecord_footer_size = 4;   // masked CRC of the data

class TfRecordWriter {
public:
    // Creates or truncates `path`. Throws DataError naming the file.
    explicit TfRecordWriter(std::string path);
    // Closes without reporting errors: call close() to see them.
    ~TfRecordWriter();
    TfRecordWriter(const TfRecordWriter&) = delete;
    TfRecordWriter& operator=(const TfRecordWriter&) = delete;

    // Appends one record and returns the byte offset where it starts.
    std::uint64_t write(ByteView record);
    void flush();
    void close();

    std::uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    void put(const void* data, std::size_t size);
    std::string path_;
    std::FILE* file_ = nullptr;
    std::uint64_t size_ = 0;
};

// The complete records of a file as found by walking its framing. A file whose last record
// is cut short (a copy that was interrupted) or whose framing is broken keeps the records
// before the damage; `damage` then says what was found where.
struct TfRecordScan {
    std::vector<std::uint64_t> offsets;  // where each complete record starts
    std::uint64_t file_size = 0;
    std::uint64_t damage_offset = 0;
    std::string damage;  // empty when the file ends cleanly after its last record
};

class TfRecordReader {
public:
    // Throws DataError when the file cannot be opened.
    explicit TfRecordReader(std::string path);

    // Sequential reading: the record at offset(), then advances. False at a clean end of
    // file; a truncated record or a CRC mismatch throws DataError "PATH: record at byte N: ...".
    bool next(Bytes& record);
    std::uint64_t offset() const { return offset_; }

    // The record that starts at `offset`, both CRCs checked. Safe to call from several
    // threads at once.
    void read_at(std::uint64_t offset, Bytes& record) const;
    Bytes read_at(std::uint64_t offset) const {
        Bytes record;
        read_at(offset, record);
        return record;
    }

    // Walks the framing from the start of the file, checking each length's CRC, without
    // reading the data.
    TfRecordScan scan_framing() const;

    const std::string& path() const { return file_.path(); }
    std::uint64_t file_size() const { return file_.size(); }

private:
    // Reads and checks the header at `offset`; returns the data length. Throws DataError.
    std::uint64_t read_header(std::uint64_t offset) const;
    std::string where(std::uint64_t offset) const;

    ReadOnlyFile file_;
    std::uint64_t offset_ = 0;
};

}  // namespace trellis::data
