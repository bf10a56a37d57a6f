// SPDX-License-Identifier: Apache-2.0
// The transform of a small grey image (the IDX datasets, 28x28): the image is centred on a
// size x size black canvas; in training it is shifted by up to four pixels each way (a random
// crop of the image padded by four, as CIFAR and Fashion-MNIST recipes do) and mirrored with
// p = 0.5. The grey value goes to all three input channels, so that every model takes it as
// it takes colour, normalised by the dataset's statistics.
#pragma once

#include <cstdint>

#include "trainer/data/augment.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/pixel_output.hpp"

namespace trellis::data {

inline constexpr int grey_shift = 4;  // pixels, each way

// Writes size x size x 3 values at `out` (normalised by the dataset's statistics when floats).
// `seed` alone decides the random choices.
void transform_grey(const EncodedSample& sample, TransformKind kind, int size, std::uint64_t seed,
                    const PixelOutput& out);

}  // namespace trellis::data
