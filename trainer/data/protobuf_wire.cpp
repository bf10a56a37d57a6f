// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/protobuf_wire.hpp"

#include <bit>

#include "trainer/data/data_error.hpp"

namespace trellis::data {
namespace {

constexpr std::uint32_t max_field_number = (1u << 29) - 1;

std::uint64_t read_little_endian(ByteView data, std::size_t offset, int size) {
    std::uint64_t value = 0;
    for (int i = size - 1; i >= 0; --i) value = (value << 8) | data[offset + i];
    return value;
}

void append_little_endian(Bytes& out, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

}  // namespace

void append_varint(Bytes& out, std::uint64_t value) {
    while (value >= 0x80) {
        out.push_back(static_cast<std::uint8_t>(value | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<std::uint8_t>(value));
}

std::uint64_t read_varint(ByteView data, std::size_t& offset, std::string_view context) {
    std::size_t start = offset;
    std::uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (offset >= data.size())
            throw DataError(std::string(context) + ": byte " + std::to_string(start) +
                            ": varint runs past the end of the data (" + std::to_string(data.size()) + " bytes)");
        std::uint8_t byte = data[offset++];
        // The tenth byte holds only the 64th bit; anything more does not fit in 64 bits.
        if (shift == 63 && byte > 1)
            throw DataError(std::string(context) + ": byte " + std::to_string(start) +
                            ": varint does not fit in 64 bits");
        value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return value;
    }
    throw DataError(std::string(context) + ": byte " + std::to_string(start) + ": varint longer than 10 bytes");
}

float WireField::as_float() const { return std::bit_cast<float>(static_cast<std::uint32_t>(value)); }

double WireField::as_double() const { return std::bit_cast<double>(value); }

void WireReader::fail(std::size_t offset, const std::string& what) const {
    throw DataError(context_ + ": byte " + std::to_string(offset) + ": " + what);
}

bool WireReader::next(WireField& field) {
    if (offset_ >= message_.size()) return false;
    field = WireField{};
    field.offset = offset_;
    std::uint64_t tag = read_varint(message_, offset_, context_);
    std::uint64_t number = tag >> 3;
    if (number == 0 || number > max_field_number)
        fail(field.offset, "field number " + std::to_string(number) + " out of range (expected 1.." +
                               std::to_string(max_field_number) + ")");
    field.number = static_cast<std::uint32_t>(number);
    field.type = static_cast<WireType>(tag & 7);
    std::size_t left = message_.size() - offset_;
    switch (field.type) {
    case WireType::varint: field.value = read_varint(message_, offset_, context_); break;
    case WireType::fixed64:
    case WireType::fixed32: {
        std::size_t size = field.type == WireType::fixed64 ? 8 : 4;
        if (left < size)
            fail(field.offset, "field " + std::to_string(number) + " needs " + std::to_string(size) + " bytes, " +
                                   std::to_string(left) + " left");
        field.value = read_little_endian(message_, offset_, static_cast<int>(size));
        offset_ += size;
        break;
    }
    case WireType::length_delimited: {
        std::uint64_t length = read_varint(message_, offset_, context_);
        left = message_.size() - offset_;
        if (length > left)
            fail(field.offset, "field " + std::to_string(number) + " says " + std::to_string(length) + " bytes, " +
                                   std::to_string(left) + " left in the message");
        field.bytes = message_.subspan(offset_, static_cast<std::size_t>(length));
        offset_ += static_cast<std::size_t>(length);
        break;
    }
    default:
        fail(field.offset, "field " + std::to_string(number) + " has wire type " + std::to_string(tag & 7) +
                               " (expected 0, 1, 2 or 5; groups are not supported)");
    }
    return true;
}

WireReader WireReader::nested(const WireField& field, std::string_view what) const {
    return WireReader(field.bytes, context_ + " " + std::string(what));
}

void WireWriter::tag(std::uint32_t number, WireType type) {
    append_varint(bytes_, (static_cast<std::uint64_t>(number) << 3) | static_cast<std::uint64_t>(type));
}

void WireWriter::varint_field(std::uint32_t number, std::uint64_t value) {
    tag(number, WireType::varint);
    append_varint(bytes_, value);
}

void WireWriter::bytes_field(std::uint32_t number, ByteView payload) {
    tag(number, WireType::length_delimited);
    append_varint(bytes_, payload.size());
    bytes_.insert(bytes_.end(), payload.begin(), payload.end());
}

void WireWriter::fixed32_field(std::uint32_t number, std::uint32_t value) {
    tag(number, WireType::fixed32);
    append_little_endian(bytes_, value, 4);
}

void WireWriter::fixed64_field(std::uint32_t number, std::uint64_t value) {
    tag(number, WireType::fixed64);
    append_little_endian(bytes_, value, 8);
}

void WireWriter::float_field(std::uint32_t number, float value) {
    fixed32_field(number, std::bit_cast<std::uint32_t>(value));
}

void WireWriter::double_field(std::uint32_t number, double value) {
    fixed64_field(number, std::bit_cast<std::uint64_t>(value));
}

}  // namespace trellis::data
