// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <turbojpeg.h>

#include <cstdlib>

#include "data_fixtures.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/jpeg.hpp"

using namespace trellis::data;
using trellis::test::test_jpeg;
using trellis::test::test_pattern;

namespace {

double mean_abs_difference(const RgbImage& a, const RgbImage& b) {
    REQUIRE(a.pixels.size() == b.pixels.size());
    double total = 0;
    for (std::size_t i = 0; i < a.pixels.size(); ++i) total += std::abs(a.pixels[i] - b.pixels[i]);
    return total / a.pixels.size();
}

}  // namespace

TEST_CASE("JPEGs round-trip through encoder and decoder") {
    RgbImage original = test_pattern(64, 48, 3);
    JpegEncoder encoder;
    Bytes jpeg = encoder.encode(original, 95);
    JpegDecoder decoder;
    JpegSize size = decoder.read_header(jpeg, "pattern");
    CHECK((size.width == 64 && size.height == 48));
    RgbImage decoded;
    DctScale scale = decoder.decode(jpeg, "pattern", decoded);
    CHECK(scale == DctScale{1, 1});
    CHECK((decoded.width == 64 && decoded.height == 48));
    CHECK(mean_abs_difference(original, decoded) < 4.0);  // 4:2:0 chroma blurs the colour edges
}

TEST_CASE("DCT scaling reduces as far as the needed size allows") {
    // 800x600 halved is 400x300, the smallest power-of-two reduction that covers 224x224.
    CHECK(choose_dct_scale({800, 600}, 224, 224) == DctScale{1, 2});
    CHECK(choose_dct_scale({800, 600}, 200, 150) == DctScale{1, 4});
    CHECK(choose_dct_scale({800, 600}, 201, 150) == DctScale{1, 2});
    CHECK(choose_dct_scale({800, 600}, 400, 300) == DctScale{1, 2});
    CHECK(choose_dct_scale({800, 600}, 401, 300) == DctScale{1, 1});
    CHECK(choose_dct_scale({800, 600}, 0, 0) == DctScale{1, 8});
    CHECK(choose_dct_scale({1000, 1000}, 125, 125) == DctScale{1, 8});
    CHECK(choose_dct_scale({1000, 1000}, 126, 1) == DctScale{1, 4});
    // Never an enlargement: an image smaller than needed decodes at full size.
    CHECK(choose_dct_scale({100, 100}, 224, 224) == DctScale{1, 1});
    CHECK(choose_dct_scale({500, 375}, 500, 1) == DctScale{1, 1});
    // libjpeg-turbo rounds scaled sizes up.
    CHECK(scaled_dimension(375, {1, 2}) == 188);
    CHECK(scaled_dimension(375, {1, 8}) == 47);
}

TEST_CASE("decoding with a minimum size uses the scaled decoder") {
    RgbImage original = test_pattern(256, 192, 1);
    Bytes jpeg = JpegEncoder().encode(original, 95);
    JpegDecoder decoder;
    RgbImage quarter;
    DctScale scale = decoder.decode(jpeg, "big", quarter, 64, 48);
    CHECK(scale == DctScale{1, 4});
    CHECK((quarter.width == 64 && quarter.height == 48));
    // Pixel (x, y) of the quarter image averages full-size pixels 4x..4x+3: compare with a
    // box-filtered original.
    RgbImage reduced{64, 48, std::vector<std::uint8_t>(64 * 48 * 3)};
    for (int y = 0; y < 48; ++y)
        for (int x = 0; x < 64; ++x)
            for (int c = 0; c < 3; ++c) {
                int sum = 0;
                for (int dy = 0; dy < 4; ++dy)
                    for (int dx = 0; dx < 4; ++dx) sum += original.pixels[((4 * y + dy) * 256 + 4 * x + dx) * 3 + c];
                reduced.pixels[(y * 64 + x) * 3 + c] = static_cast<std::uint8_t>(sum / 16);
            }
    CHECK(mean_abs_difference(quarter, reduced) < 4.0);
}

TEST_CASE("unreadable data is a DataError naming the source") {
    JpegDecoder decoder;
    RgbImage image;
    Bytes garbage(500, 0x42);
    CHECK_THROWS_WITH(decoder.decode(garbage, "/data/train/n01/x.JPEG", image),
                      Catch::Contains("/data/train/n01/x.JPEG") && Catch::Contains("not a readable JPEG"));
    CHECK_THROWS_AS(decoder.read_header(Bytes{}, "empty"), DataError);
    // The decoder stays usable after an error.
    Bytes good = test_jpeg(32, 32);
    CHECK_NOTHROW(decoder.decode(good, "good", image));
}

TEST_CASE("a truncated scan decodes with libjpeg's warning tolerated") {
    Bytes jpeg = test_jpeg(128, 128, 2);
    Bytes cut(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() * 2 / 3));
    JpegDecoder decoder;
    RgbImage image;
    CHECK_NOTHROW(decoder.decode(cut, "cut", image));
    CHECK((image.width == 128 && image.height == 128));
}

TEST_CASE("CMYK JPEGs come out as RGB") {
    // Inverted (Adobe) CMYK whose RGB is C*K/255, M*K/255, Y*K/255 = (200, 100, 50).
    const int width = 16, height = 16;
    std::vector<unsigned char> cmyk(width * height * 4);
    for (int i = 0; i < width * height; ++i) {
        cmyk[i * 4 + 0] = 200;
        cmyk[i * 4 + 1] = 100;
        cmyk[i * 4 + 2] = 50;
        cmyk[i * 4 + 3] = 255;
    }
    tjhandle compressor = tjInitCompress();
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    REQUIRE(tjCompress2(compressor, cmyk.data(), width, 0, height, TJPF_CMYK, &buffer, &size, TJSAMP_444, 95, 0) == 0);
    Bytes jpeg(buffer, buffer + size);
    tjFree(buffer);
    tjDestroy(compressor);

    JpegDecoder decoder;
    RgbImage image;
    decoder.decode(jpeg, "cmyk", image);
    REQUIRE(image.pixels.size() == width * height * 3);
    CHECK(std::abs(image.pixels[0] - 200) <= 3);
    CHECK(std::abs(image.pixels[1] - 100) <= 3);
    CHECK(std::abs(image.pixels[2] - 50) <= 3);
}
