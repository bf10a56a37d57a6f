// SPDX-License-Identifier: Apache-2.0
// A dataset is an indexed list of encoded samples. Datasets do the cheap part (find and read
// the bytes, know the label); decoding and augmentation belong to the pipeline.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trellis::data {

enum class SampleEncoding {
    jpeg,  // bytes is a JPEG file
    grey,  // bytes is height x width grey pixels, row by row (IDX datasets)
};

struct EncodedSample {
    std::vector<std::uint8_t> bytes;
    int label = 0;       // in [0, num_classes)
    std::string source;  // "PATH" or "SHARD:OFFSET", for messages
    SampleEncoding encoding = SampleEncoding::jpeg;
    int width = 0, height = 0;  // grey only
};

// What the pipeline subtracts from and divides the [0, 1] pixel values by, per channel.
struct ChannelStatistics {
    std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet's, by default
    std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

class Dataset {
public:
    virtual ~Dataset() = default;
    virtual std::size_t size() const = 0;
    virtual int num_classes() const = 0;
    // Callable from several threads at once. Throws DataError for an unreadable sample.
    virtual EncodedSample load(std::size_t index) const = 0;
    // One line for the log: what, where, how many samples and classes.
    virtual std::string describe() const = 0;
    // ImageNet's unless the dataset knows its own.
    virtual ChannelStatistics statistics() const { return {}; }
};

}  // namespace trellis::data
