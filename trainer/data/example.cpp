// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/example.hpp"

#include <bit>

#include "trainer/data/data_error.hpp"
#include "trainer/data/protobuf_wire.hpp"

namespace trellis::data {
namespace {

void parse_bytes_list(WireReader reader, Feature& feature) {
    WireField field;
    while (reader.next(field))
        if (field.number == 1) {
            if (field.type != WireType::length_delimited)
                reader.fail(field.offset, "BytesList value is not length-delimited");
            feature.bytes.push_back(field.bytes);
        }
}

void parse_float_list(WireReader reader, Feature& feature) {
    WireField field;
    while (reader.next(field)) {
        if (field.number != 1) continue;
        if (field.type == WireType::fixed32) {
            feature.floats.push_back(field.as_float());
        } else if (field.type == WireType::length_delimited) {
            if (field.bytes.size() % 4 != 0)
                reader.fail(field.offset, "packed FloatList of " + std::to_string(field.bytes.size()) +
                                              " bytes, not a multiple of 4");
            for (std::size_t i = 0; i < field.bytes.size(); i += 4) {
                std::uint32_t bits = 0;
                for (int b = 3; b >= 0; --b) bits = (bits << 8) | field.bytes[i + b];
                feature.floats.push_back(std::bit_cast<float>(bits));
            }
        } else {
            reader.fail(field.offset, "FloatList value has wire type " + std::to_string(static_cast<int>(field.type)) +
                                          " (expected 5, or 2 when packed)");
        }
    }
}

void parse_int64_list(WireReader reader, Feature& feature) {
    WireField field;
    while (reader.next(field)) {
        if (field.number != 1) continue;
        if (field.type == WireType::varint) {
            feature.int64s.push_back(field.as_int64());
        } else if (field.type == WireType::length_delimited) {
            std::size_t offset = 0;
            std::string context = reader.context() + " packed int64 at byte " + std::to_string(field.offset);
            while (offset < field.bytes.size())
                feature.int64s.push_back(static_cast<std::int64_t>(read_varint(field.bytes, offset, context)));
        } else {
            reader.fail(field.offset, "Int64List value has wire type " + std::to_string(static_cast<int>(field.type)) +
                                          " (expected 0, or 2 when packed)");
        }
    }
}

void parse_feature(WireReader reader, Feature& feature) {
    WireField field;
    while (reader.next(field)) {
        if (field.number < 1 || field.number > 3) continue;
        if (field.type != WireType::length_delimited)
            reader.fail(field.offset, "Feature field " + std::to_string(field.number) + " is not a nested message");
        // A oneof: a later member replaces an earlier one.
        feature = Feature{};
        if (field.number == 1) parse_bytes_list(reader.nested(field, "bytes_list"), feature);
        if (field.number == 2) parse_float_list(reader.nested(field, "float_list"), feature);
        if (field.number == 3) parse_int64_list(reader.nested(field, "int64_list"), feature);
    }
}

void parse_map_entry(WireReader reader, Features& features) {
    std::string key;
    Feature value;
    WireField field;
    while (reader.next(field)) {
        if (field.type != WireType::length_delimited) continue;
        if (field.number == 1) key = std::string(as_text(field.bytes));
        if (field.number == 2) {
            value = Feature{};
            parse_feature(reader.nested(field, "feature"), value);
        }
    }
    features.insert_or_assign(std::move(key), std::move(value));
}

const Feature& require(const Features& features, const char* name, const std::string& source) {
    auto it = features.find(name);
    if (it == features.end()) {
        std::string present;
        for (const auto& [key, feature] : features) present += (present.empty() ? "" : ", ") + key;
        throw DataError(source + ": tf.Example has no '" + name +
                        "' feature (it has: " + (present.empty() ? "none" : present) + ")");
    }
    return it->second;
}

}  // namespace

Features parse_example(ByteView record, const std::string& source) {
    Features features;
    WireReader example(record, source + ": tf.Example");
    WireField field;
    while (example.next(field)) {
        if (field.number != 1) continue;
        if (field.type != WireType::length_delimited)
            example.fail(field.offset, "Example.features is not a nested message");
        WireReader map = example.nested(field, "features");
        WireField entry;
        while (map.next(entry)) {
            if (entry.number != 1) continue;
            if (entry.type != WireType::length_delimited)
                map.fail(entry.offset, "Features map entry is not a nested message");
            parse_map_entry(map.nested(entry, "entry"), features);
        }
    }
    return features;
}

ImageExample parse_image_example(ByteView record, const std::string& source) {
    Features features = parse_example(record, source);
    const Feature& image = require(features, image_feature, source);
    const Feature& label = require(features, label_feature, source);
    if (image.bytes.size() != 1)
        throw DataError(source + ": tf.Example '" + image_feature + "' holds " + std::to_string(image.bytes.size()) +
                        " byte strings (expected 1)");
    if (label.int64s.size() != 1)
        throw DataError(source + ": tf.Example '" + label_feature + "' holds " + std::to_string(label.int64s.size()) +
                        " int64 values (expected 1)");
    return {Bytes(image.bytes[0].begin(), image.bytes[0].end()), label.int64s[0]};
}

Bytes encode_image_example(ByteView jpeg, std::int64_t label) {
    auto entry = [](std::string_view key, std::uint32_t kind, const WireWriter& list) {
        WireWriter feature, map_entry;
        feature.message_field(kind, list);
        map_entry.string_field(1, key);
        map_entry.message_field(2, feature);
        return map_entry;
    };
    WireWriter bytes_list;
    bytes_list.bytes_field(1, jpeg);
    // Packed, as TensorFlow writes repeated numbers.
    Bytes packed_label;
    append_varint(packed_label, static_cast<std::uint64_t>(label));
    WireWriter int64_list;
    int64_list.bytes_field(1, packed_label);

    WireWriter features;
    features.message_field(1, entry(image_feature, 1, bytes_list));
    features.message_field(1, entry(label_feature, 3, int64_list));
    WireWriter example;
    example.message_field(1, features);
    return example.take();
}

}  // namespace trellis::data
