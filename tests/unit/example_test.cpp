// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <cstring>

#include "trainer/data/data_error.hpp"
#include "trainer/data/example.hpp"
#include "trainer/data/protobuf_wire.hpp"

using namespace trellis::data;

namespace {

// Example { features { feature { key: KEY value: FEATURE } ... } } from raw Feature messages.
Bytes example_of(const std::vector<std::pair<std::string, WireWriter>>& features) {
    WireWriter map;
    for (const auto& [key, feature] : features) {
        WireWriter entry;
        entry.string_field(1, key);
        entry.message_field(2, feature);
        map.message_field(1, entry);
    }
    WireWriter example;
    example.message_field(1, map);
    return example.take();
}

WireWriter feature_of(std::uint32_t kind, const WireWriter& list) {
    WireWriter feature;
    feature.message_field(kind, list);
    return feature;
}

}  // namespace

TEST_CASE("an encoded image example parses back") {
    Bytes jpeg = {0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 0xff, 0xd9};
    Bytes record = encode_image_example(jpeg, 417);
    ImageExample parsed = parse_image_example(record, "shard:0");
    CHECK(parsed.encoded == jpeg);
    CHECK(parsed.label == 417);

    Features features = parse_example(record, "shard:0");
    REQUIRE(features.size() == 2);
    CHECK(features.at(image_feature).bytes.size() == 1);
    CHECK(features.at(label_feature).int64s == std::vector<std::int64_t>{417});
}

TEST_CASE("the bytes TensorFlow writes for a one-feature Example parse") {
    // tf.train.Example(features=tf.train.Features(feature={"a": Int64List(value=[1])}))
    Bytes record = {0x0a, 0x0c, 0x0a, 0x0a, 0x0a, 0x01, 0x61, 0x12, 0x05, 0x1a, 0x03, 0x0a, 0x01, 0x01};
    Features features = parse_example(record, "literal");
    REQUIRE(features.count("a") == 1);
    CHECK(features.at("a").int64s == std::vector<std::int64_t>{1});
}

TEST_CASE("the full ImageNet layout, packed or not, with extra features") {
    WireWriter jpeg_list, label_unpacked, text_list, bbox_packed, bbox_unpacked, height;
    jpeg_list.string_field(1, "JPEGDATA");
    label_unpacked.int64_field(1, 7);  // an unpacked int64
    text_list.string_field(1, "tench, Tinca tinca");
    Bytes floats;
    for (float value : {0.25f, 0.5f}) {
        std::uint32_t bits;
        std::memcpy(&bits, &value, 4);
        for (int i = 0; i < 4; ++i) floats.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
    }
    bbox_packed.bytes_field(1, floats);
    bbox_unpacked.float_field(1, 0.75f);
    bbox_unpacked.float_field(1, 1.0f);
    height.int64_field(1, 375);

    Bytes record = example_of({{"image/class/text", feature_of(1, text_list)},
                               {"image/object/bbox/xmin", feature_of(2, bbox_packed)},
                               {"image/object/bbox/xmax", feature_of(2, bbox_unpacked)},
                               {"image/height", feature_of(3, height)},
                               {"image/encoded", feature_of(1, jpeg_list)},
                               {"image/class/label", feature_of(3, label_unpacked)}});
    Features features = parse_example(record, "shard:1");
    CHECK(features.at("image/object/bbox/xmin").floats == std::vector<float>{0.25f, 0.5f});
    CHECK(features.at("image/object/bbox/xmax").floats == std::vector<float>{0.75f, 1.0f});
    CHECK(features.at("image/height").int64s == std::vector<std::int64_t>{375});
    ImageExample image = parse_image_example(record, "shard:1");
    CHECK(as_text(image.encoded) == "JPEGDATA");
    CHECK(image.label == 7);
}

TEST_CASE("map semantics: the last entry of a key wins, negative labels survive") {
    WireWriter first, second;
    first.int64_field(1, 1);
    second.int64_field(1, -3);
    Features features = parse_example(example_of({{"k", feature_of(3, first)}, {"k", feature_of(3, second)}}), "dup");
    CHECK(features.at("k").int64s == std::vector<std::int64_t>{-3});
}

TEST_CASE("examples without the image or the label are refused naming the source") {
    WireWriter jpeg_list;
    jpeg_list.string_field(1, "x");
    Bytes no_label = example_of({{"image/encoded", feature_of(1, jpeg_list)}});
    CHECK_THROWS_WITH(parse_image_example(no_label, "train-00003:4096"),
                      Catch::Contains("train-00003:4096") && Catch::Contains("no 'image/class/label' feature") &&
                          Catch::Contains("it has: image/encoded"));

    WireWriter two_labels;
    two_labels.int64_field(1, 1);
    two_labels.int64_field(1, 2);
    Bytes ambiguous =
        example_of({{"image/encoded", feature_of(1, jpeg_list)}, {"image/class/label", feature_of(3, two_labels)}});
    CHECK_THROWS_WITH(parse_image_example(ambiguous, "s"), Catch::Contains("2 int64 values (expected 1)"));
}

TEST_CASE("malformed examples throw DataError with the source") {
    Bytes record = encode_image_example(Bytes(100, 0xab), 3);
    Bytes cut(record.begin(), record.begin() + 50);
    CHECK_THROWS_WITH(parse_image_example(cut, "val-00001:77"),
                      Catch::Contains("val-00001:77") && Catch::Contains("tf.Example"));

    WireWriter wrong;
    wrong.varint_field(1, 5);  // a FloatList value must be fixed32 or packed
    CHECK_THROWS_WITH(parse_example(example_of({{"f", feature_of(2, wrong)}}), "s"),
                      Catch::Contains("FloatList value has wire type 0"));

    WireWriter odd;
    odd.bytes_field(1, Bytes{1, 2, 3});
    CHECK_THROWS_WITH(parse_example(example_of({{"f", feature_of(2, odd)}}), "s"),
                      Catch::Contains("not a multiple of 4"));
    CHECK_THROWS_AS(parse_image_example(as_bytes("garbage!"), "s"), DataError);
}
