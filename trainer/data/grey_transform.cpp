// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/grey_transform.hpp"

#include "trainer/data/rng.hpp"

namespace trellis::data {

void transform_grey(const EncodedSample& sample, TransformKind kind, int size, std::uint64_t seed,
                    const PixelOutput& out) {
    int dx = 0, dy = 0;
    bool flip = false;
    if (kind == TransformKind::training) {
        Rng rng(seed);
        dx = int(rng.between(-grey_shift, grey_shift));
        dy = int(rng.between(-grey_shift, grey_shift));
        flip = rng.uniform() < 0.5;
    }
    // Canvas pixel (y, x) shows image pixel (y - top, x - left), black outside the image.
    int top = (size - sample.height) / 2 + dy, left = (size - sample.width) / 2 + dx;
    write_pixels(out, [&](auto store) {
        for (int y = 0; y < size; ++y) {
            int row = y - top;
            for (int x = 0; x < size; ++x) {
                int column = (flip ? size - 1 - x : x) - left;
                bool inside = row >= 0 && row < sample.height && column >= 0 && column < sample.width;
                float value =
                    inside ? sample.bytes[std::size_t(row) * std::size_t(sample.width) + std::size_t(column)] : 0.0f;
                std::size_t pixel = (std::size_t(y) * std::size_t(size) + std::size_t(x)) * 3;
                for (int c = 0; c < 3; ++c) store(pixel + std::size_t(c), c, value);
            }
        }
    });
}

}  // namespace trellis::data
