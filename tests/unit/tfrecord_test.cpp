// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <filesystem>

#include "data_fixtures.hpp"
#include "trainer/data/crc32c.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/read_only_file.hpp"
#include "trainer/data/tfrecord.hpp"

using namespace trellis::data;
using trellis::test::TempDir;
using trellis::test::write_file;

namespace {

std::vector<Bytes> sample_records() {
    Bytes large(100000);
    for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<std::uint8_t>(i * 7);
    return {Bytes{'a', 'b', 'c'}, Bytes{}, large};
}

std::vector<std::uint64_t> write_records(const std::string& path) {
    TfRecordWriter writer(path);
    std::vector<std::uint64_t> offsets;
    for (const Bytes& record : sample_records()) offsets.push_back(writer.write(record));
    writer.close();
    return offsets;
}

}  // namespace

TEST_CASE("records written are read back in order and by offset") {
    TempDir dir;
    std::string path = dir / "train-00000-of-00001";
    std::vector<std::uint64_t> offsets = write_records(path);
    std::vector<Bytes> expected = sample_records();
    CHECK(offsets == std::vector<std::uint64_t>{0, 19, 35});
    CHECK(std::filesystem::file_size(path) == 35 + 16 + 100000);

    TfRecordReader reader(path);
    Bytes record;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(reader.offset() == offsets[i]);
        REQUIRE(reader.next(record));
        CHECK(record == expected[i]);
    }
    CHECK_FALSE(reader.next(record));
    for (std::size_t i = expected.size(); i-- > 0;) CHECK(reader.read_at(offsets[i]) == expected[i]);

    TfRecordScan scan = reader.scan_framing();
    CHECK(scan.offsets == offsets);
    CHECK(scan.damage.empty());
}

TEST_CASE("the framing is TFRecord's: length, masked CRC of the length, data, masked CRC") {
    TempDir dir;
    std::string path = dir / "one";
    {
        TfRecordWriter writer(path);
        writer.write(as_bytes("xyz"));
    }
    Bytes file = read_whole_file(path);
    REQUIRE(file.size() == 8 + 4 + 3 + 4);
    CHECK(Bytes(file.begin(), file.begin() + 8) == Bytes{3, 0, 0, 0, 0, 0, 0, 0});
    auto le32 = [&](std::size_t at) {
        return std::uint32_t(file[at]) | std::uint32_t(file[at + 1]) << 8 | std::uint32_t(file[at + 2]) << 16 |
               std::uint32_t(file[at + 3]) << 24;
    };
    CHECK(le32(8) == mask_crc(crc32c(ByteView(file.data(), 8))));
    CHECK(le32(15) == mask_crc(crc32c(as_bytes("xyz"))));
}

TEST_CASE("a corrupted record is reported with its file and byte offset") {
    TempDir dir;
    std::string path = dir / "corrupt";
    std::vector<std::uint64_t> offsets = write_records(path);
    Bytes file = read_whole_file(path);
    file[offsets[2] + 12 + 500] ^= 0x01;  // one bit of the third record's data
    write_file(path, file);

    TfRecordReader reader(path);
    CHECK_NOTHROW(reader.read_at(offsets[0]));
    std::string where = path + ": record at byte " + std::to_string(offsets[2]);
    CHECK_THROWS_WITH(reader.read_at(offsets[2]), Catch::Contains(where) && Catch::Contains("data CRC mismatch"));
    Bytes record;
    REQUIRE(reader.next(record));
    REQUIRE(reader.next(record));
    CHECK_THROWS_AS(reader.next(record), DataError);
    // The framing is intact: the index still sees all three records.
    CHECK(reader.scan_framing().offsets.size() == 3);
}

TEST_CASE("a broken length CRC ends the scan where it is") {
    TempDir dir;
    std::string path = dir / "bad-length";
    std::vector<std::uint64_t> offsets = write_records(path);
    Bytes file = read_whole_file(path);
    file[offsets[1] + 9] ^= 0x40;
    write_file(path, file);
    TfRecordScan scan = TfRecordReader(path).scan_framing();
    CHECK(scan.offsets == std::vector<std::uint64_t>{0});
    CHECK(scan.damage_offset == offsets[1]);
    CHECK_THAT(scan.damage, Catch::Contains("length CRC mismatch") && Catch::Contains(path));
}

TEST_CASE("a truncated tail keeps the complete records") {
    TempDir dir;
    std::string path = dir / "truncated";
    std::vector<std::uint64_t> offsets = write_records(path);
    std::uintmax_t size = std::filesystem::file_size(path);

    SECTION("cut inside the data") {
        std::filesystem::resize_file(path, size - 10);
        TfRecordReader reader(path);
        TfRecordScan scan = reader.scan_framing();
        CHECK(scan.offsets == std::vector<std::uint64_t>{offsets[0], offsets[1]});
        CHECK(scan.damage_offset == offsets[2]);
        CHECK_THAT(scan.damage, Catch::Contains("truncated record") &&
                                    Catch::Contains("record at byte " + std::to_string(offsets[2])));
        CHECK_THROWS_WITH(reader.read_at(offsets[2]), Catch::Contains("truncated record"));
    }
    SECTION("cut inside a header") {
        std::filesystem::resize_file(path, offsets[2] + 5);
        TfRecordScan scan = TfRecordReader(path).scan_framing();
        CHECK(scan.offsets.size() == 2);
        CHECK_THAT(scan.damage, Catch::Contains("truncated header (5 of 12 bytes"));
    }
}

TEST_CASE("files that cannot be opened are named") {
    TempDir dir;
    CHECK_THROWS_WITH(TfRecordReader(dir / "missing"),
                      Catch::Contains(dir / "missing") && Catch::Contains("cannot open"));
    CHECK_THROWS_WITH(TfRecordWriter(dir / "no/such/folder"), Catch::Contains("cannot create"));
    write_file(dir / "empty", Bytes{});
    TfRecordReader empty(dir / "empty");
    Bytes record;
    CHECK_FALSE(empty.next(record));
    CHECK(empty.scan_framing().offsets.empty());
}
