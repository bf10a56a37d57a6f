// SPDX-License-Identifier: Apache-2.0
// Where a transform writes an image's size x size x 3 pixels (HWC): normalised floats, which the
// CPU backend trains on, or the 0..255 values rounded to bytes, for a consumer that normalises
// them where it computes (the GPU backend, on the device: a quarter of the bytes to copy, and no
// float work on the decoding threads).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "trainer/data/dataset.hpp"

namespace trellis::data {

// value * gain + bias == (value / 255 - mean) / std, per channel.
struct Normalisation {
    std::array<float, 3> gain{}, bias{};
    static Normalisation of(const ChannelStatistics& statistics);
};

struct PixelOutput {
    float* floats = nullptr;        // when set: normalised
    std::uint8_t* bytes = nullptr;  // else: the values, rounded
    Normalisation normalisation;

    static PixelOutput normalised(float* out, const ChannelStatistics& statistics) {
        return {out, nullptr, Normalisation::of(statistics)};
    }
    static PixelOutput raw(std::uint8_t* out) { return {nullptr, out, {}}; }
};

// Calls render(store) once, with store(i, channel, value) writing element i of the output: the
// kind of output is chosen once per image, not per pixel.
template <class Render>
void write_pixels(const PixelOutput& out, Render&& render) {
    if (out.floats) {
        auto gain = out.normalisation.gain, bias = out.normalisation.bias;
        float* floats = out.floats;
        render([=](std::size_t i, int c, float value) { floats[i] = value * gain[c] + bias[c]; });
    } else {
        std::uint8_t* bytes = out.bytes;
        render([=](std::size_t i, int, float value) { bytes[i] = static_cast<std::uint8_t>(value + 0.5f); });
    }
}

}  // namespace trellis::data
