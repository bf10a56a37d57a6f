// A dataset is an indexed list of encoded samples. Datasets do the cheap part (find and read
// the bytes, know the label); decoding and augmentation belong to the pipeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trellis::data {

struct EncodedSample {
    std::vector<std::uint8_t> bytes;  // the JPEG file
    int label = 0;                    // in [0, num_classes)
    std::string source;               // "PATH" or "SHARD:OFFSET", for messages
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
};

}  // namespace trellis::data
