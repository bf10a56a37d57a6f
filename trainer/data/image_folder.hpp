// SPDX-License-Identifier: Apache-2.0
// An ImageNet folder tree, ROOT/<split>/<class>/*.JPEG (also .jpg and .jpeg, any case), as
// torchvision's ImageFolder reads it: classes sorted by name, a class's label is its position
// in that list, and images are listed in name order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace trellis::data {

class ImageFolderDataset : public Dataset {
public:
    // Lists ROOT/SPLIT. The class list comes from ROOT/train whenever it exists, so that a
    // validation split is labelled exactly as the training split (a class folder in SPLIT
    // that train lacks is an error). Throws DataSpecError naming the path when the folder is
    // missing, holds no class folders or no images, DataError when it cannot be listed.
    ImageFolderDataset(std::string root, std::string split);

    std::size_t size() const override { return labels_.size(); }
    int num_classes() const override { return static_cast<int>(classes_.size()); }
    EncodedSample load(std::size_t index) const override;
    std::string describe() const override;

    const std::vector<std::string>& classes() const { return classes_; }
    std::string path(std::size_t index) const;
    int label(std::size_t index) const { return labels_[index]; }

private:
    void list_class(const std::string& name, int label);

    std::string split_dir_;
    std::vector<std::string> classes_;
    // "class/file" of every image back to back: about a third of the memory of one
    // std::string per image, which matters at 1.28 million images per rank.
    std::string names_;
    std::vector<std::size_t> name_ends_;
    std::vector<int> labels_;
};

// True for .jpeg, .jpg, .JPEG, .Jpg, ...
bool has_jpeg_extension(const std::string& file_name);

}  // namespace trellis::data
