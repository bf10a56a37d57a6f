// SPDX-License-Identifier: Apache-2.0
// The per-sample image transform: choose a crop from the JPEG header, decode only the crop's
// region with DCT scaling, resample the crop bilinearly to size x size (mirrored when flipped), and
// write it normalised with the ImageNet channel statistics, or as bytes (pixel_output.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "trainer/data/crop_box.hpp"
#include "trainer/data/jpeg.hpp"
#include "trainer/data/pixel_output.hpp"

namespace trellis::data {

enum class TransformKind {
    training,    // random-resized-crop + horizontal flip with p = 0.5
    evaluation,  // shorter side to size/0.875, centre crop
};

// ImageNet statistics of RGB values in [0, 1].
inline constexpr std::array<float, 3> imagenet_mean = {0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> imagenet_std = {0.229f, 0.224f, 0.225f};

inline float normalize_channel(float value_0_255, int channel) {
    return (value_0_255 / 255.0f - imagenet_mean[channel]) / imagenet_std[channel];
}

struct TransformPlan {
    CropBox box;  // in full-size pixels
    bool flip = false;
};

// Training draws the box first, then the flip, from `rng`; evaluation uses no randomness.
TransformPlan plan_transform(TransformKind kind, JpegSize image, int size, Rng& rng);

// Resamples plan.box of an image decoded at `scale` into size x size x 3 values at `out`.
void render_crop(const RgbImage& decoded, DctScale scale, const TransformPlan& plan, int size, const PixelOutput& out);

// The whole transform of one encoded sample. `seed` alone decides the random choices;
// `decoder` and `scratch` are the calling thread's, reused across samples.
void transform_jpeg(ByteView jpeg, const std::string& source, TransformKind kind, int size, std::uint64_t seed,
                    JpegDecoder& decoder, RgbImage& scratch, const PixelOutput& out);

}  // namespace trellis::data
