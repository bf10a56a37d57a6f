// SPDX-License-Identifier: Apache-2.0
// The protobuf wire format, just enough of it to read tf.Example records and to write
// TensorBoard event files without a generated-code dependency. Reading is zero-copy: a
// field's bytes are a view into the message, which must outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "trainer/data/bytes.hpp"

namespace trellis::data {

enum class WireType : std::uint8_t {
    varint = 0,
    fixed64 = 1,
    length_delimited = 2,
    start_group = 3,  // deprecated groups: refused when read, never written
    end_group = 4,
    fixed32 = 5,
};

// Appends `value` as a base-128 varint (1 to 10 bytes).
void append_varint(Bytes& out, std::uint64_t value);

// Reads a varint at `offset` and advances it. Throws DataError naming `context` and the
// offset when the data ends inside the varint or the varint is longer than 10 bytes.
std::uint64_t read_varint(ByteView data, std::size_t& offset, std::string_view context);

struct WireField {
    std::uint32_t number = 0;
    WireType type = WireType::varint;
    std::uint64_t value = 0;  // varint, fixed32 and fixed64 fields: the raw bits
    ByteView bytes;           // length-delimited fields: the payload
    std::size_t offset = 0;   // where the field's tag starts in the message

    float as_float() const;    // fixed32 bits as IEEE float
    double as_double() const;  // fixed64 bits as IEEE double
    std::int64_t as_int64() const { return static_cast<std::int64_t>(value); }
};

// Walks the fields of one message in order. Every length and tag is checked against the end
// of the message; malformed input throws DataError "CONTEXT: byte N: what is wrong".
class WireReader {
public:
    WireReader(ByteView message, std::string context) : message_(message), context_(std::move(context)) {}

    // Fills `field` with the next field; false at the end of the message.
    bool next(WireField& field);

    // A reader over a nested message, with the context extended by `what` (for messages that
    // say which part of the record was malformed).
    WireReader nested(const WireField& field, std::string_view what) const;

    const std::string& context() const { return context_; }
    [[noreturn]] void fail(std::size_t offset, const std::string& what) const;

private:
    ByteView message_;
    std::size_t offset_ = 0;
    std::string context_;
};

// Builds one message. Fields are appended in call order; nested messages are built with a
// second writer and added with `message_field`.
class WireWriter {
public:
    void varint_field(std::uint32_t number, std::uint64_t value);
    void int64_field(std::uint32_t number, std::int64_t value) {
        varint_field(number, static_cast<std::uint64_t>(value));
    }
    void bytes_field(std::uint32_t number, ByteView payload);
    void string_field(std::uint32_t number, std::string_view text) { bytes_field(number, as_bytes(text)); }
    void message_field(std::uint32_t number, const WireWriter& nested) { bytes_field(number, nested.bytes()); }
    void fixed32_field(std::uint32_t number, std::uint32_t value);
    void fixed64_field(std::uint32_t number, std::uint64_t value);
    void float_field(std::uint32_t number, float value);
    void double_field(std::uint32_t number, double value);

    const Bytes& bytes() const { return bytes_; }
    Bytes take() { return std::move(bytes_); }

private:
    void tag(std::uint32_t number, WireType type);
    Bytes bytes_;
};

}  // namespace trellis::data
