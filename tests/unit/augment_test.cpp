// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <cmath>

#include "data_fixtures.hpp"
#include "trainer/data/augment.hpp"

using namespace trellis::data;
using trellis::test::test_jpeg;
using trellis::test::test_pattern;

namespace {

// Normalised floats with ImageNet's statistics (every JPEG dataset's).
PixelOutput imagenet(float* out) { return PixelOutput::normalised(out, ChannelStatistics{}); }

}  // namespace

TEST_CASE("random-resized-crop boxes stay inside the image and within the ranges") {
    Rng rng(12345);
    const JpegSize sizes[] = {{500, 375}, {375, 500}, {64, 64}, {1, 1}, {3000, 40}, {40, 3000}, {224, 1}};
    for (JpegSize image : sizes)
        for (int i = 0; i < 500; ++i) {
            CropBox box = random_resized_crop(image, rng);
            INFO(image.width << "x" << image.height << " box " << box.x << "," << box.y << " " << box.width << "x"
                             << box.height);
            REQUIRE(box.x >= 0);
            REQUIRE(box.y >= 0);
            REQUIRE(box.width >= 1);
            REQUIRE(box.height >= 1);
            REQUIRE(box.x + box.width <= image.width);
            REQUIRE(box.y + box.height <= image.height);
            REQUIRE(box.x == std::floor(box.x));
            REQUIRE(box.width == std::floor(box.width));
        }
}

TEST_CASE("random-resized-crop draws area and aspect ratio as torchvision does") {
    Rng rng(99);
    JpegSize image{1000, 1000};
    double smallest_area = 1, largest_area = 0;
    for (int i = 0; i < 2000; ++i) {
        CropBox box = random_resized_crop(image, rng);
        double area = box.width * box.height / 1e6;
        double ratio = box.width / box.height;
        smallest_area = std::min(smallest_area, area);
        largest_area = std::max(largest_area, area);
        CHECK(area >= 0.079);
        CHECK(ratio >= 0.74);
        CHECK(ratio <= 1.34);
    }
    CHECK(smallest_area < 0.1);
    CHECK(largest_area > 0.9);
}

TEST_CASE("elongated images fall back to the centred box of the extreme ratio") {
    Rng rng(1);
    CropBox box = random_resized_crop({3000, 40}, rng);
    CHECK(box.height == 40);
    CHECK(box.width == 53);  // round(40 * 4/3)
    CHECK(box.x == (3000 - 53) / 2);
    CHECK(box.y == 0);
}

TEST_CASE("the evaluation crop is resize-to-size/0.875 then centre crop") {
    CropBox box = evaluation_center_crop({500, 375}, 224);
    double side = 224.0 * 375 / 256;  // 224 of the 256 pixels the shorter side is resized to
    CHECK(box.width == Approx(side));
    CHECK(box.height == Approx(side));
    CHECK(box.x == Approx((500 - side) / 2));
    CHECK(box.y == Approx((375 - side) / 2));
}

TEST_CASE("an unscaled centre crop copies pixels exactly, normalised") {
    // The shorter side is already 256: the 224 crop samples pixel centres, no interpolation.
    RgbImage image = test_pattern(292, 256, 4);
    TransformPlan plan{evaluation_center_crop({292, 256}, 224), false};
    std::vector<float> out(224 * 224 * 3);
    render_crop(image, {1, 1}, plan, 224, imagenet(out.data()));
    for (int y : {0, 100, 223})
        for (int x : {0, 17, 223})
            for (int c = 0; c < 3; ++c) {
                float expected = normalize_channel(image.pixels[((y + 16) * 292 + x + 34) * 3 + c], c);
                CHECK(out[(y * 224 + x) * 3 + c] == Approx(expected).margin(1e-5));
            }
}

TEST_CASE("normalisation uses the ImageNet mean and standard deviation") {
    CHECK(normalize_channel(0.485f * 255, 0) == Approx(0).margin(1e-6));
    CHECK(normalize_channel(255, 1) == Approx((1 - 0.456) / 0.224));
    CHECK(normalize_channel(0, 2) == Approx(-0.406 / 0.225));
}

TEST_CASE("a crop rendered as bytes is the floats' values, rounded, before normalisation") {
    RgbImage image = test_pattern(80, 60, 2);
    TransformPlan plan{{10.3, 5.7, 50.2, 40.9}, true};  // interpolated: fractional values
    std::vector<float> floats(32 * 32 * 3);
    std::vector<std::uint8_t> bytes(32 * 32 * 3);
    render_crop(image, {1, 1}, plan, 32, imagenet(floats.data()));
    render_crop(image, {1, 1}, plan, 32, PixelOutput::raw(bytes.data()));
    auto normalisation = Normalisation::of(ChannelStatistics{});
    std::size_t rounded = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        int c = int(i % 3);
        float value = (floats[i] - normalisation.bias[c]) / normalisation.gain[c];  // back to 0..255
        REQUIRE(std::abs(float(bytes[i]) - value) <= 0.5f + 1e-3f);
        rounded += float(bytes[i]) != value;
    }
    CHECK(rounded > 0);  // the test sees interpolated values, not only whole ones
}

TEST_CASE("a flipped crop is the exact mirror image") {
    RgbImage image = test_pattern(80, 60, 2);
    TransformPlan plan{{10, 5, 50, 40}, false};
    std::vector<float> plain(32 * 32 * 3), mirrored(32 * 32 * 3);
    render_crop(image, {1, 1}, plan, 32, imagenet(plain.data()));
    plan.flip = true;
    render_crop(image, {1, 1}, plan, 32, imagenet(mirrored.data()));
    for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x)
            for (int c = 0; c < 3; ++c) REQUIRE(mirrored[(y * 32 + x) * 3 + c] == plain[(y * 32 + 31 - x) * 3 + c]);
}

TEST_CASE("the transform writes exactly size x size x 3 values, deterministically") {
    Bytes jpeg = test_jpeg(120, 90, 5);
    JpegDecoder decoder;
    RgbImage scratch;
    const int size = 48;
    const float guard = -12345.0f;
    auto run = [&](TransformKind kind, std::uint64_t seed) {
        std::vector<float> out(size * size * 3 + 16, guard);
        transform_jpeg(jpeg, "test", kind, size, seed, decoder, scratch, imagenet(out.data()));
        for (std::size_t i = size * size * 3; i < out.size(); ++i) REQUIRE(out[i] == guard);
        for (std::size_t i = 0; i < size * size * 3; ++i) REQUIRE(std::isfinite(out[i]));
        out.resize(size * size * 3);
        return out;
    };
    CHECK(run(TransformKind::training, 1) == run(TransformKind::training, 1));
    CHECK(run(TransformKind::training, 1) != run(TransformKind::training, 2));
    // Evaluation ignores the seed.
    CHECK(run(TransformKind::evaluation, 1) == run(TransformKind::evaluation, 2));
}

TEST_CASE("decoding with DCT scaling gives nearly the full-size result") {
    RgbImage original = test_pattern(640, 480, 6);
    Bytes jpeg = JpegEncoder().encode(original, 95);
    JpegDecoder decoder;
    TransformPlan plan{evaluation_center_crop({640, 480}, 64), true};
    JpegSize needed = min_decoded_size({640, 480}, plan.box, 64);

    RgbImage full, reduced;
    DctScale full_scale = decoder.decode(jpeg, "full", full);
    DctScale reduced_scale = decoder.decode(jpeg, "reduced", reduced, needed.width, needed.height);
    CHECK(reduced_scale.num * 4 <= reduced_scale.denom);  // 1/4 or less of 640x480 still covers it
    std::vector<float> a(64 * 64 * 3), b(64 * 64 * 3);
    render_crop(full, full_scale, plan, 64, imagenet(a.data()));
    render_crop(reduced, reduced_scale, plan, 64, imagenet(b.data()));
    double difference = 0;
    for (std::size_t i = 0; i < a.size(); ++i) difference += std::fabs(a[i] - b[i]);
    CHECK(difference / a.size() < 0.05);  // in normalised units: about 3 grey levels
}

TEST_CASE("decoding only the crop's region renders what a whole decode renders") {
    RgbImage original = test_pattern(500, 375, 9);
    Bytes jpeg = JpegEncoder().encode(original, 90);  // 4:2:0, as photographs are
    JpegDecoder decoder;
    Rng rng(3);
    std::size_t differing = 0, total = 0, smaller = 0;
    for (int trial = 0; trial < 40; ++trial) {
        TransformPlan plan = plan_transform(TransformKind::training, {500, 375}, 64, rng);
        JpegSize needed = min_decoded_size({500, 375}, plan.box, 64);
        RgbImage whole, part;
        DctScale whole_scale = decoder.decode(jpeg, "whole", whole, needed.width, needed.height);
        PixelRegion region{int(std::floor(plan.box.x)), int(std::floor(plan.box.y)),
                           int(std::ceil(plan.box.x + plan.box.width)) - int(std::floor(plan.box.x)),
                           int(std::ceil(plan.box.y + plan.box.height)) - int(std::floor(plan.box.y))};
        DctScale part_scale = decoder.decode_region(jpeg, "part", part, needed.width, needed.height, region);
        REQUIRE(part_scale == whole_scale);
        smaller += part.pixels.size() < whole.pixels.size();
        std::vector<float> a(64 * 64 * 3), b(64 * 64 * 3);
        render_crop(whole, whole_scale, plan, 64, imagenet(a.data()));
        render_crop(part, part_scale, plan, 64, imagenet(b.data()));
        for (std::size_t i = 0; i < a.size(); ++i, ++total) differing += std::fabs(a[i] - b[i]) > 1e-5f;
    }
    CHECK(smaller > 30);  // most crops decode fewer pixels
    CHECK(differing == 0);
}
