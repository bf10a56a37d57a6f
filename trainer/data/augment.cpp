// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/augment.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace trellis::data {
namespace {

// Source positions and weights along one output axis: output pixel i mixes source pixels
// first[i] and second[i] (its right or lower neighbour, clamped at the border) by weight[i].
struct AxisSamples {
    std::vector<int> first, second;
    std::vector<float> weight;
};

// Output pixel centres are spread evenly over [start, start + length) of a source axis of
// `extent` pixels, as a resize of the box would place them.
AxisSamples sample_axis(double start, double length, int extent, int size) {
    AxisSamples samples;
    samples.first.resize(size);
    samples.second.resize(size);
    samples.weight.resize(size);
    double step = length / size;
    for (int i = 0; i < size; ++i) {
        double centre = start + (i + 0.5) * step - 0.5;
        centre = std::clamp(centre, 0.0, static_cast<double>(extent - 1));
        int low = static_cast<int>(std::floor(centre));
        samples.first[i] = low;
        samples.second[i] = std::min(low + 1, extent - 1);
        samples.weight[i] = static_cast<float>(centre - low);
    }
    return samples;
}

}  // namespace

TransformPlan plan_transform(TransformKind kind, JpegSize image, int size, Rng& rng) {
    if (kind == TransformKind::evaluation) return {evaluation_center_crop(image, size), false};
    TransformPlan plan;
    plan.box = random_resized_crop(image, rng);
    plan.flip = rng.uniform() < 0.5;
    return plan;
}

void render_crop(const RgbImage& decoded, DctScale scale, const TransformPlan& plan, int size, const PixelOutput& out) {
    double factor = static_cast<double>(scale.num) / scale.denom;
    // Positions in the decoded pixels, which start at (decoded.x, decoded.y) of the scaled
    // image when only a region was decoded.
    AxisSamples columns = sample_axis(plan.box.x * factor - decoded.x, plan.box.width * factor, decoded.width, size);
    AxisSamples rows = sample_axis(plan.box.y * factor - decoded.y, plan.box.height * factor, decoded.height, size);
    const std::size_t stride = static_cast<std::size_t>(decoded.width) * 3;
    write_pixels(out, [&](auto store) {
        for (int y = 0; y < size; ++y) {
            const std::uint8_t* top = decoded.pixels.data() + rows.first[y] * stride;
            const std::uint8_t* bottom = decoded.pixels.data() + rows.second[y] * stride;
            float wy = rows.weight[y];
            std::size_t row_out = static_cast<std::size_t>(y) * size * 3;
            for (int x = 0; x < size; ++x) {
                // A flipped output reads its columns right to left: the exact mirror image.
                int column = plan.flip ? size - 1 - x : x;
                int left = columns.first[column] * 3, right = columns.second[column] * 3;
                float wx = columns.weight[column];
                for (int c = 0; c < 3; ++c) {
                    float upper = top[left + c] + wx * (top[right + c] - top[left + c]);
                    float lower = bottom[left + c] + wx * (bottom[right + c] - bottom[left + c]);
                    store(row_out + std::size_t(x) * 3 + std::size_t(c), c, upper + wy * (lower - upper));
                }
            }
        }
    });
}

void transform_jpeg(ByteView jpeg, const std::string& source, TransformKind kind, int size, std::uint64_t seed,
                    JpegDecoder& decoder, RgbImage& scratch, const PixelOutput& out) {
    JpegSize image = decoder.read_header(jpeg, source);
    Rng rng(seed);
    TransformPlan plan = plan_transform(kind, image, size, rng);
    JpegSize needed = min_decoded_size(image, plan.box, size);
    PixelRegion region{int(std::floor(plan.box.x)), int(std::floor(plan.box.y)),
                       int(std::ceil(plan.box.x + plan.box.width)) - int(std::floor(plan.box.x)),
                       int(std::ceil(plan.box.y + plan.box.height)) - int(std::floor(plan.box.y))};
    DctScale scale = decoder.decode_region(jpeg, source, scratch, needed.width, needed.height, region);
    render_crop(scratch, scale, plan, size, out);
}

}  // namespace trellis::data
