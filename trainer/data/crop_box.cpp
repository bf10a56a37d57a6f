// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/crop_box.hpp"

#include <algorithm>
#include <cmath>

namespace trellis::data {

CropBox random_resized_crop(JpegSize image, Rng& rng, double min_area, double max_area, double min_ratio,
                            double max_ratio) {
    const double area = static_cast<double>(image.width) * image.height;
    const double log_min_ratio = std::log(min_ratio), log_max_ratio = std::log(max_ratio);
    for (int attempt = 0; attempt < 10; ++attempt) {
        double target_area = area * rng.uniform(min_area, max_area);
        double ratio = std::exp(rng.uniform(log_min_ratio, log_max_ratio));
        long width = std::lround(std::sqrt(target_area * ratio));
        long height = std::lround(std::sqrt(target_area / ratio));
        if (width > 0 && width <= image.width && height > 0 && height <= image.height) {
            long top = rng.between(0, image.height - height);
            long left = rng.between(0, image.width - width);
            return {static_cast<double>(left), static_cast<double>(top), static_cast<double>(width),
                    static_cast<double>(height)};
        }
    }
    // Very elongated images: keep the whole short side, clip the long one to the ratio range.
    double in_ratio = static_cast<double>(image.width) / image.height;
    long width = image.width, height = image.height;
    if (in_ratio < min_ratio) {
        height = std::lround(width / min_ratio);
    } else if (in_ratio > max_ratio) {
        width = std::lround(height * max_ratio);
    }
    width = std::clamp(width, 1l, static_cast<long>(image.width));
    height = std::clamp(height, 1l, static_cast<long>(image.height));
    return {static_cast<double>((image.width - width) / 2), static_cast<double>((image.height - height) / 2),
            static_cast<double>(width), static_cast<double>(height)};
}

CropBox evaluation_center_crop(JpegSize image, int size, double crop_fraction) {
    double shorter = std::min(image.width, image.height);
    double resized_shorter = std::round(size / crop_fraction);
    double side = size * shorter / resized_shorter;  // `size` resized pixels, in full-size pixels
    double width = std::min<double>(side, image.width);
    double height = std::min<double>(side, image.height);
    return {(image.width - width) / 2, (image.height - height) / 2, width, height};
}

JpegSize min_decoded_size(JpegSize image, const CropBox& box, int size) {
    // The epsilon keeps an exact fit (a 512-pixel side halved to 256 for a 256 crop) from
    // being pushed to the next pixel by rounding.
    return {static_cast<int>(std::ceil(image.width * size / box.width - 1e-6)),
            static_cast<int>(std::ceil(image.height * size / box.height - 1e-6))};
}

}  // namespace trellis::data
