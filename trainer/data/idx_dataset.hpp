// SPDX-License-Identifier: Apache-2.0
// MNIST-style datasets in IDX files (Fashion-MNIST as Debian's dataset-fashion-mnist installs
// it under /usr/share/datasets/fashion-mnist): DIR/PREFIX-images-idx3-ubyte[.gz] (count x rows
// x columns grey bytes) and DIR/PREFIX-labels-idx1-ubyte[.gz] (count labels), with PREFIX
// "train" for training and "t10k" for evaluation. Held in memory: 47 MB for 60,000 images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace trellis::data {

class IdxDataset : public Dataset {
public:
    // Reads both files. Throws DataSpecError naming a missing file, DataError naming a file
    // that is malformed (see read_idx),
    // images larger than 65535 on a side, or images and labels that disagree in count. `classes`: 0 to take the largest label + 1.
    IdxDataset(std::string folder, std::string prefix, int classes = 0);

    std::size_t size() const override { return labels_.size(); }
    int num_classes() const override { return classes_; }
    EncodedSample load(std::size_t index) const override;
    std::string describe() const override;
    // The mean and standard deviation of the training images' pixels, on every channel (the
    // evaluation split is normalised with the training split's, as it must be).
    ChannelStatistics statistics() const override { return statistics_; }
    void use_statistics(const ChannelStatistics& statistics) { statistics_ = statistics; }

    int rows() const { return rows_; }
    int columns() const { return columns_; }

private:
    std::string folder_, prefix_, images_path_;
    int rows_ = 0, columns_ = 0, classes_ = 0;
    std::vector<std::uint8_t> pixels_;
    std::vector<std::uint8_t> labels_;
    ChannelStatistics statistics_;
};

// The files of PREFIX in FOLDER (the .gz form when the plain one is absent), for messages.
std::string idx_images_path(const std::string& folder, const std::string& prefix);
std::string idx_labels_path(const std::string& folder, const std::string& prefix);

}  // namespace trellis::data
