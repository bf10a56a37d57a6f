// SPDX-License-Identifier: Apache-2.0
// JPEG decoding and encoding through libjpeg-turbo: its TurboJPEG API, and its libjpeg API
// where TurboJPEG 2 cannot decode part of an image. A decoder owns one TurboJPEG handle,
// which is not thread-safe: each loader thread keeps its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/bytes.hpp"

namespace trellis::data {

struct JpegSize {
    int width = 0;
    int height = 0;
};

// 8-bit RGB, rows top to bottom, pixels interleaved (HWC).
struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> pixels;
    // Where these pixels start in the whole (scaled) image: 0, 0 unless only a region of it
    // was decoded.
    int x = 0, y = 0;
};

// A rectangle of pixels: columns [x, x + width), rows [y, y + height).
struct PixelRegion {
    int x = 0, y = 0, width = 0, height = 0;
};

// A DCT scaling factor num/denom (libjpeg-turbo offers n/8 for n = 1..16).
struct DctScale {
    int num = 1;
    int denom = 1;
    bool operator==(const DctScale&) const = default;
};

// The size libjpeg-turbo produces for `dimension` scaled by `scale` (it rounds up).
int scaled_dimension(int dimension, DctScale scale);

// The strongest of libjpeg-turbo's 1/2, 1/4 and 1/8 reductions that keeps the decoded image
// at least min_width x min_height: it skips most of the IDCT and colour work when the crop
// will be shrunk anyway, and leaves the resampler a ratio below 2, where bilinear filtering
// barely aliases. 1/1 when no reduction keeps that size. (The other n/8 factors are left
// out: they decode slower than full size; see jpeg.cpp.)
DctScale choose_dct_scale(JpegSize full, int min_width, int min_height);

class JpegDecoder {
public:
    JpegDecoder();
    ~JpegDecoder();
    JpegDecoder(const JpegDecoder&) = delete;
    JpegDecoder& operator=(const JpegDecoder&) = delete;

    // Width and height from the JPEG header. Throws DataError naming `source` when the data
    // is not a readable JPEG.
    JpegSize read_header(ByteView jpeg, const std::string& source);

    // Decodes into `out` (its buffer is reused across calls), reduced by
    // choose_dct_scale(header, min_width, min_height); 0, 0 decodes at full size. Greyscale
    // and CMYK images come out as RGB. libjpeg warnings (extraneous bytes, a truncated scan)
    // are tolerated as other ImageNet readers tolerate them; errors throw DataError.
    // Returns the scale used: decoded pixel (x, y) covers full-size (x, y) / scale.
    DctScale decode(ByteView jpeg, const std::string& source, RgbImage& out, int min_width = 0, int min_height = 0);

    // The same, but only the rows of `region` (given in full-size pixels) and its columns
    // widened to whole DCT blocks, as libjpeg-turbo can crop: rows below the region are not
    // decoded at all, rows above are skipped without their colour work, and columns outside
    // it are left out. out.x and out.y say where the decoded pixels sit in the scaled image;
    // they equal those of a whole decode. CMYK images are decoded whole.
    DctScale decode_region(ByteView jpeg, const std::string& source, RgbImage& out, int min_width, int min_height,
                           PixelRegion region);

private:
    void* handle_;
};

class JpegEncoder {
public:
    JpegEncoder();
    ~JpegEncoder();
    JpegEncoder(const JpegEncoder&) = delete;
    JpegEncoder& operator=(const JpegEncoder&) = delete;

    // Baseline JPEG with 4:2:0 chroma subsampling, as cameras and ImageNet's files use.
    Bytes encode(const RgbImage& image, int quality = 90);

private:
    void* handle_;
};

}  // namespace trellis::data
