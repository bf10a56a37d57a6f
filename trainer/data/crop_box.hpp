// SPDX-License-Identifier: Apache-2.0
// Where in the full-size image a sample's output is taken from. Boxes are chosen from the
// JPEG header alone, before decoding, so that the decoder can use DCT scaling when the box
// is much larger than the output.
#pragma once

#include "trainer/data/jpeg.hpp"
#include "trainer/data/rng.hpp"

namespace trellis::data {

// A rectangle in full-size pixel coordinates (continuous: pixel i spans [i, i+1)).
struct CropBox {
    double x = 0, y = 0, width = 0, height = 0;
};

// torchvision's RandomResizedCrop: up to 10 tries of an area fraction in [0.08, 1] and a
// log-uniform aspect ratio in [3/4, 4/3], placed uniformly at whole-pixel positions; when no
// try fits, the largest centred box whose aspect ratio is within the range.
CropBox random_resized_crop(JpegSize image, Rng& rng, double min_area = 0.08, double max_area = 1.0,
                            double min_ratio = 3.0 / 4.0, double max_ratio = 4.0 / 3.0);

// The standard ImageNet evaluation crop expressed in full-size coordinates: the box that
// "resize the shorter side to size/crop_fraction, then centre-crop size x size" keeps.
CropBox evaluation_center_crop(JpegSize image, int size, double crop_fraction = 0.875);

// The smallest decoded size at which `box` still spans `size` pixels both ways: the minimum
// to pass to the decoder so that DCT scaling never makes the crop upsampled.
JpegSize min_decoded_size(JpegSize image, const CropBox& box, int size);

}  // namespace trellis::data
