// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <cstring>
#include <limits>

#include "trainer/data/data_error.hpp"
#include "trainer/data/protobuf_wire.hpp"

using namespace trellis::data;

TEST_CASE("varints encode as protobuf documents them") {
    Bytes out;
    append_varint(out, 1);
    CHECK(out == Bytes{0x01});
    out.clear();
    append_varint(out, 300);
    CHECK(out == Bytes{0xac, 0x02});
    out.clear();
    append_varint(out, std::numeric_limits<std::uint64_t>::max());
    CHECK(out.size() == 10);
    CHECK(out.back() == 0x01);
}

TEST_CASE("varints round-trip at every width") {
    for (int bits = 0; bits <= 64; ++bits) {
        std::uint64_t value = bits == 64 ? ~0ull : (1ull << bits) - 1;
        Bytes out;
        append_varint(out, value);
        std::size_t offset = 0;
        CHECK(read_varint(out, offset, "test") == value);
        CHECK(offset == out.size());
    }
}

TEST_CASE("fields round-trip through writer and reader") {
    WireWriter nested;
    nested.string_field(1, "inner");
    WireWriter writer;
    writer.varint_field(1, 150);
    writer.int64_field(2, -2);
    writer.string_field(3, "hello");
    writer.fixed32_field(4, 0xdeadbeef);
    writer.fixed64_field(5, 0x0123456789abcdefull);
    writer.float_field(6, 1.5f);
    writer.double_field(7, -0.25);
    writer.message_field(8, nested);
    writer.varint_field(536870911, 1);  // the largest field number

    // The first field is the example of protobuf's encoding guide.
    CHECK(Bytes(writer.bytes().begin(), writer.bytes().begin() + 3) == Bytes{0x08, 0x96, 0x01});

    WireReader reader(writer.bytes(), "test");
    WireField field;
    REQUIRE(reader.next(field));
    CHECK((field.number == 1 && field.type == WireType::varint && field.value == 150));
    REQUIRE(reader.next(field));
    CHECK(field.as_int64() == -2);
    REQUIRE(reader.next(field));
    CHECK((field.type == WireType::length_delimited && as_text(field.bytes) == "hello"));
    REQUIRE(reader.next(field));
    CHECK((field.type == WireType::fixed32 && field.value == 0xdeadbeef));
    REQUIRE(reader.next(field));
    CHECK((field.type == WireType::fixed64 && field.value == 0x0123456789abcdefull));
    REQUIRE(reader.next(field));
    CHECK(field.as_float() == 1.5f);
    REQUIRE(reader.next(field));
    CHECK(field.as_double() == -0.25);
    REQUIRE(reader.next(field));
    WireReader inner = reader.nested(field, "nested");
    WireField inner_field;
    REQUIRE(inner.next(inner_field));
    CHECK(as_text(inner_field.bytes) == "inner");
    CHECK_FALSE(inner.next(inner_field));
    REQUIRE(reader.next(field));
    CHECK(field.number == 536870911);
    CHECK_FALSE(reader.next(field));
}

TEST_CASE("malformed messages are refused with the context and byte offset") {
    auto walk = [](Bytes message) {
        WireReader reader(message, "shard-7:1234");
        WireField field;
        while (reader.next(field)) {}
    };
    // A varint whose continuation bit runs off the end.
    CHECK_THROWS_WITH(walk({0x08, 0x96}),
                      Catch::Contains("shard-7:1234") && Catch::Contains("varint runs past the end"));
    // Eleven continuation bytes.
    CHECK_THROWS_WITH(walk(Bytes(11, 0xff)), Catch::Contains("does not fit in 64 bits"));
    // A length that claims more than is there.
    CHECK_THROWS_WITH(walk({0x08, 0x01, 0x1a, 0x05, 'a', 'b'}),
                      Catch::Contains("byte 2") && Catch::Contains("says 5 bytes, 2 left"));
    // Field number 0.
    CHECK_THROWS_WITH(walk({0x00, 0x01}), Catch::Contains("field number 0"));
    // Groups and the undefined wire types 6 and 7.
    CHECK_THROWS_WITH(walk({0x0b}), Catch::Contains("wire type 3"));
    CHECK_THROWS_AS(walk({0x0e}), DataError);
    CHECK_THROWS_AS(walk({0x0f}), DataError);
    // Fixed-width fields cut short.
    CHECK_THROWS_WITH(walk({0x0d, 1, 2, 3}), Catch::Contains("needs 4 bytes, 3 left"));
    CHECK_THROWS_WITH(walk({0x09, 1, 2, 3, 4, 5, 6, 7}), Catch::Contains("needs 8 bytes"));
}

TEST_CASE("an empty message has no fields") {
    WireReader reader(ByteView{}, "empty");
    WireField field;
    CHECK_FALSE(reader.next(field));
}
