// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <chrono>
#include <numeric>

#include "trainer/data/crc32c.hpp"
#include "trainer/data/rng.hpp"

using namespace trellis::data;

namespace {

// Bit by bit, straight from the definition: the reference the table-driven code must match.
std::uint32_t crc32c_bitwise(ByteView data) {
    std::uint32_t crc = ~0u;
    for (std::uint8_t byte : data) {
        crc ^= byte;
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0x82f63b78u : 0);
    }
    return ~crc;
}

}  // namespace

TEST_CASE("CRC-32C matches the published check values") {
    CHECK(crc32c(as_bytes("123456789")) == 0xe3069283u);
    CHECK(crc32c(as_bytes("")) == 0u);
    // RFC 3720 (iSCSI) appendix B.4.
    Bytes zeros(32, 0x00), ones(32, 0xff), ascending(32), descending(32);
    std::iota(ascending.begin(), ascending.end(), 0);
    for (int i = 0; i < 32; ++i) descending[i] = static_cast<std::uint8_t>(31 - i);
    CHECK(crc32c(zeros) == 0x8a9136aau);
    CHECK(crc32c(ones) == 0x62a8ab43u);
    CHECK(crc32c(ascending) == 0x46dd794eu);
    CHECK(crc32c(descending) == 0x113fdb5cu);
}

TEST_CASE("CRC-32C agrees with the bitwise definition at every length and alignment") {
    Rng rng(7);
    Bytes data(300);
    for (auto& byte : data) byte = static_cast<std::uint8_t>(rng.next_u64());
    for (std::size_t start = 0; start < 9; ++start)
        for (std::size_t length = 0; start + length <= data.size(); length += 7) {
            ByteView part(data.data() + start, length);
            REQUIRE(crc32c(part) == crc32c_bitwise(part));
        }
}

TEST_CASE("CRC-32C continues across pieces") {
    Bytes data(1000);
    std::iota(data.begin(), data.end(), 3);
    std::uint32_t whole = crc32c(data);
    for (std::size_t split : {0, 1, 7, 8, 9, 500, 999, 1000}) {
        ByteView all(data);
        CHECK(crc32c(all.subspan(split), crc32c(all.first(split))) == whole);
    }
}

TEST_CASE("TFRecord's masked CRC rotates, offsets, and unmasks") {
    std::uint32_t crc = crc32c(as_bytes("123456789"));
    CHECK(mask_crc(crc) == ((crc >> 15 | crc << 17) + 0xa282ead8u));
    CHECK(unmask_crc(mask_crc(crc)) == crc);
    CHECK(masked_crc32c(as_bytes("123456789")) == mask_crc(crc));
    for (std::uint32_t value : {0u, 1u, 0xffffffffu, 0x80000000u, 0x12345678u})
        CHECK(unmask_crc(mask_crc(value)) == value);
}

TEST_CASE("CRC-32C runs well above 100 MB/s") {
    Bytes data(32 << 20, 0x5a);
    auto start = std::chrono::steady_clock::now();
    volatile std::uint32_t sink = crc32c(data);
    (void)sink;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double megabytes_per_second = 32 / seconds;
    INFO("CRC-32C: " << megabytes_per_second << " MB/s");
    CHECK(megabytes_per_second > 100);
}
