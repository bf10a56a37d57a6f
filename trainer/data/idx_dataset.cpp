// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/idx_dataset.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "trainer/data/data_error.hpp"
#include "trainer/data/idx_file.hpp"

namespace trellis::data {

namespace {

constexpr std::uint32_t max_side = 65535;

std::string existing(const std::string& folder, const std::string& name) {
    auto plain = (std::filesystem::path(folder) / name).string();
    return std::filesystem::exists(plain) ? plain : plain + ".gz";
}

}  // namespace

std::string idx_images_path(const std::string& folder, const std::string& prefix) {
    return existing(folder, prefix + "-images-idx3-ubyte");
}

std::string idx_labels_path(const std::string& folder, const std::string& prefix) {
    return existing(folder, prefix + "-labels-idx1-ubyte");
}

IdxDataset::IdxDataset(std::string folder, std::string prefix, int classes)
    : folder_(std::move(folder)), prefix_(std::move(prefix)), images_path_(idx_images_path(folder_, prefix_)) {
    const auto& images_path = images_path_;
    auto labels_path = idx_labels_path(folder_, prefix_);
    // A missing file is a wrong --data, not a damaged one.
    for (const auto& path : {images_path, labels_path})
        if (!std::filesystem::exists(path))
            throw DataSpecError(path + ": no such file (an IDX folder holds " + prefix_ + "-images-idx3-ubyte and " +
                                prefix_ + "-labels-idx1-ubyte, each optionally .gz)");
    auto images = read_idx(images_path, 3);
    // JPEG's limit: every image that the transforms take fits in it, and so does any product of
    // two sides in the int arithmetic they size buffers with.
    if (images.dims[1] > max_side || images.dims[2] > max_side)
        throw DataError(images_path + ": images of " + std::to_string(images.dims[1]) + "x" +
                        std::to_string(images.dims[2]) + ", expected at most " + std::to_string(max_side) +
                        " on a side");
    auto labels = read_idx(labels_path, 1);
    if (images.dims[0] != labels.dims[0])
        throw DataError(images_path + " holds " + std::to_string(images.dims[0]) + " images but " + labels_path + " " +
                        std::to_string(labels.dims[0]) + " labels (expected as many)");
    rows_ = int(images.dims[1]), columns_ = int(images.dims[2]);
    pixels_ = std::move(images.values);
    labels_ = std::move(labels.values);
    int largest = *std::max_element(labels_.begin(), labels_.end());
    classes_ = classes > 0 ? classes : largest + 1;
    if (largest >= classes_)
        throw DataError(labels_path + ": label " + std::to_string(largest) + ", expected below " +
                        std::to_string(classes_) + " (the training split's classes)");
    double sum = 0, squares = 0;
    for (std::uint8_t value : pixels_) sum += value, squares += double(value) * value;
    double n = double(pixels_.size()), mean = sum / n / 255.0;
    double deviation = std::sqrt(std::max(squares / n / (255.0 * 255.0) - mean * mean, 1e-12));
    statistics_.mean.fill(float(mean));
    statistics_.std.fill(float(deviation));
}

EncodedSample IdxDataset::load(std::size_t index) const {
    EncodedSample sample;
    std::size_t pixels = std::size_t(rows_) * std::size_t(columns_);
    auto first = pixels_.begin() + std::ptrdiff_t(index * pixels);
    sample.bytes.assign(first, first + std::ptrdiff_t(pixels));
    sample.label = labels_[index];
    sample.source = images_path_ + ":" + std::to_string(index);
    sample.encoding = SampleEncoding::grey;
    sample.width = columns_, sample.height = rows_;
    return sample;
}

std::string IdxDataset::describe() const {
    return "IDX " + folder_ + " (" + prefix_ + "): " + std::to_string(size()) + " grey " + std::to_string(rows_) + "x" +
           std::to_string(columns_) + " images, " + std::to_string(classes_) + " classes";
}

}  // namespace trellis::data
