// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/tfrecord.hpp"

#include <cerrno>
#include <cstring>

#include "trainer/data/crc32c.hpp"
#include "trainer/data/data_error.hpp"

namespace trellis::data {
namespace {

void store_le(std::uint8_t* out, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t load_le(const std::uint8_t* in, int size) {
    std::uint64_t value = 0;
    for (int i = size - 1; i >= 0; --i) value = (value << 8) | in[i];
    return value;
}

std::string hex(std::uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", value);
    return text;
}

}  // namespace

TfRecordWriter::TfRecordWriter(std::string path) : path_(std::move(path)) {
    file_ = std::fopen(path_.c_str(), "wbe");
    if (!file_) throw DataError(path_ + ": cannot create: " + std::strerror(errno));
}

TfRecordWriter::~TfRecordWriter() {
    if (file_) std::fclose(file_);
}

void TfRecordWriter::put(const void* data, std::size_t size) {
    if (!file_) throw DataError(path_ + ": write after close");
    if (size > 0 && std::fwrite(data, 1, size, file_) != size)
        throw DataError(path_ + ": write failed at byte " + std::to_string(size_) + ": " + std::strerror(errno));
    size_ += size;
}

std::uint64_t TfRecordWriter::write(ByteView record) {
    std::uint64_t start = size_;
    std::uint8_t header[tfrecord_header_size];
    store_le(header, record.size(), 8);
    store_le(header + 8, masked_crc32c(ByteView(header, 8)), 4);
    std::uint8_t footer[tfrecord_footer_size];
    store_le(footer, masked_crc32c(record), 4);
    put(header, sizeof header);
    put(record.data(), record.size());
    put(footer, sizeof footer);
    return start;
}

void TfRecordWriter::flush() {
    if (file_ && std::fflush(file_) != 0) throw DataError(path_ + ": flush failed: " + std::strerror(errno));
}

void TfRecordWriter::close() {
    if (!file_) return;
    std::FILE* file = file_;
    file_ = nullptr;
    if (std::fclose(file) != 0) throw DataError(path_ + ": close failed: " + std::strerror(errno));
}

TfRecordReader::TfRecordReader(std::string path) : file_(std::move(path)) {}

std::string TfRecordReader::where(std::uint64_t offset) const {
    return file_.path() + ": record at byte " + std::to_string(offset);
}

std::uint64_t TfRecordReader::read_header(std::uint64_t offset) const {
    std::uint8_t header[tfrecord_header_size];
    std::size_t got = file_.read_at(offset, header, sizeof header);
    if (got < sizeof header)
        throw DataError(where(offset) + ": truncated header (" + std::to_string(got) + " of " +
                        std::to_string(sizeof header) + " bytes before the end of the file)");
    std::uint32_t stored = static_cast<std::uint32_t>(load_le(header + 8, 4));
    std::uint32_t computed = masked_crc32c(ByteView(header, 8));
    if (stored != computed)
        throw DataError(where(offset) + ": length CRC mismatch (stored " + hex(stored) + ", computed " + hex(computed) +
                        "): not a TFRecord file, or corrupt");
    std::uint64_t length = load_le(header, 8);
    std::uint64_t left = file_.size() - offset - sizeof header;
    if (length > left || left - length < tfrecord_footer_size)
        throw DataError(where(offset) + ": truncated record (header says " + std::to_string(length) +
                        " data bytes + 4 CRC bytes, " + std::to_string(left) + " bytes left in the file)");
    return length;
}

void TfRecordReader::read_at(std::uint64_t offset, Bytes& record) const {
    std::uint64_t length = read_header(offset);
    record.resize(static_cast<std::size_t>(length) + tfrecord_footer_size);
    std::size_t got = file_.read_at(offset + tfrecord_header_size, record.data(), record.size());
    if (got != record.size())
        throw DataError(where(offset) + ": file shrank while reading (" + std::to_string(got) + " of " +
                        std::to_string(record.size()) + " bytes)");
    std::uint32_t stored = static_cast<std::uint32_t>(load_le(record.data() + length, 4));
    record.resize(static_cast<std::size_t>(length));
    std::uint32_t computed = masked_crc32c(record);
    if (stored != computed)
        throw DataError(where(offset) + ": data CRC mismatch (stored " + hex(stored) + ", computed " + hex(computed) +
                        " over " + std::to_string(length) + " bytes)");
}

bool TfRecordReader::next(Bytes& record) {
    if (offset_ == file_.size()) return false;
    read_at(offset_, record);
    offset_ += tfrecord_header_size + record.size() + tfrecord_footer_size;
    return true;
}

TfRecordScan TfRecordReader::scan_framing() const {
    TfRecordScan scan;
    scan.file_size = file_.size();
    std::uint64_t offset = 0;
    while (offset < scan.file_size) {
        std::uint64_t length = 0;
        try {
            length = read_header(offset);
        } catch (const DataError& error) {
            scan.damage_offset = offset;
            scan.damage = error.what();
            break;
        }
        scan.offsets.push_back(offset);
        offset += tfrecord_header_size + length + tfrecord_footer_size;
    }
    return scan;
}

}  // namespace trellis::data
