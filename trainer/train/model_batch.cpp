// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/model_batch.hpp"

#include <algorithm>

#include "trainer/data/pixel_output.hpp"

namespace trellis::train {

namespace {

models::Images bytes_with(std::span<const std::uint8_t> bytes, const data::ChannelStatistics& statistics) {
    auto normalisation = data::Normalisation::of(statistics);
    return models::Images(nn::PixelBytes{bytes, normalisation.gain, normalisation.bias});
}

}  // namespace

models::Images images_of(const data::Batch& batch) {
    models::Images images = batch.pixels.empty() ? models::Images(std::span<const float>(batch.images))
                                                 : bytes_with(batch.pixels, batch.statistics);
    images.unchanging = batch.unchanging;
    return images;
}

PackedBatch::PackedBatch(int batch_size, std::size_t image_values)
    : image_values_(image_values), labels_(std::size_t(batch_size)) {}

int PackedBatch::pack(const data::Batch& batch) {
    raw_ = !batch.pixels.empty();
    std::size_t values = labels_.size() * image_values_;
    if (raw_) {
        bytes_.resize(values);
        statistics_ = batch.statistics;
    } else {
        floats_.resize(values);
    }
    auto move = [&](const auto& from, auto& to, std::size_t i, std::size_t slot) {
        std::copy_n(from.begin() + std::ptrdiff_t(i * image_values_), image_values_,
                    to.begin() + std::ptrdiff_t(slot * image_values_));
    };
    std::size_t count = 0;
    for (std::size_t i = 0; i < std::size_t(batch.size); ++i) {
        if (!batch.stand_in.empty() && batch.stand_in[i]) continue;
        if (raw_)
            move(batch.pixels, bytes_, i, count);
        else
            move(batch.images, floats_, i, count);
        labels_[count++] = batch.labels[i];
    }
    std::fill(labels_.begin() + std::ptrdiff_t(count), labels_.end(), 0);
    return int(count);
}

models::Images PackedBatch::images() const {
    if (raw_) return bytes_with(bytes_, statistics_);
    return models::Images(std::span<const float>(floats_));
}

}  // namespace trellis::train
