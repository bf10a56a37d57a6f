// SPDX-License-Identifier: Apache-2.0
// tf.Example, the record format of TensorFlow's ImageNet TFRecords:
//   Example { Features features = 1; }
//   Features { map<string, Feature> feature = 1; }
//   Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                          Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }
//   FloatList { repeated float value = 1 [packed]; }
//   Int64List { repeated int64 value = 1 [packed]; }
// Packed and unpacked repeated numbers are both accepted, as protobuf parsers must.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/data/bytes.hpp"

namespace trellis::data {

// One feature. Byte strings are views into the parsed record, which must outlive them.
struct Feature {
    std::vector<ByteView> bytes;
    std::vector<float> floats;
    std::vector<std::int64_t> int64s;
};

using Features = std::map<std::string, Feature, std::less<>>;

// Throws DataError "SOURCE: tf.Example ... byte N: ..." on malformed input. When a key
// appears twice the last one wins, as in protobuf's map semantics.
Features parse_example(ByteView record, const std::string& source);

// The two features the trainer needs, under the names of TensorFlow's ImageNet layout.
inline constexpr const char* image_feature = "image/encoded";
inline constexpr const char* label_feature = "image/class/label";

struct ImageExample {
    Bytes encoded;       // the JPEG file
    std::int64_t label;  // as stored: 1..1000 in TensorFlow's ImageNet layout (0 = background)
};

// Parses `record` and extracts the image and label. Throws DataError naming `source` when
// either is missing or holds other than exactly one value.
ImageExample parse_image_example(ByteView record, const std::string& source);

// A tf.Example with the two features above (tests and the dataset generator).
Bytes encode_image_example(ByteView jpeg, std::int64_t label);

}  // namespace trellis::data
