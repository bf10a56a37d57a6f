// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/segmented_exchange.hpp"

#include <algorithm>

namespace trellis::comm {

SegmentedExchange::SegmentedExchange(Transport& transport, std::size_t segment_bytes, WireFormat format)
    : transport_(transport),
      segment_elements_(std::max<std::size_t>(segment_bytes / sizeof(float), 1024)),
      format_(format) {}

SegmentedExchange::~SegmentedExchange() {
    transport_.forget(incoming_.data(), incoming_.size());
    transport_.forget(outgoing_.data(), outgoing_.size());
}

void SegmentedExchange::reserve(std::size_t elements) {
    std::size_t bytes = std::min(elements, segment_elements_) * sizeof(float);
    for (auto* staging : {&incoming_, &outgoing_})
        if (staging->size() < bytes) {
            transport_.forget(staging->data(), staging->size());  // about to be freed
            staging->resize(bytes);
        }
}

void SegmentedExchange::exchange(int to, std::span<const float> out, int from, std::span<float> in, bool accumulate) {
    const std::size_t width = wire_bytes(format_);
    reserve(std::max(out.size(), in.size()));
    auto piece = [&](auto values, std::size_t offset) {  // the segment at offset, maybe empty
        auto rest = values.subspan(std::min(offset, values.size()));
        return rest.first(std::min(rest.size(), segment_elements_));
    };
    for (std::size_t offset = 0; offset < std::max(out.size(), in.size()); offset += segment_elements_) {
        auto out_part = piece(out, offset);
        auto in_part = piece(in, offset);
        const void* sending = out_part.data();
        if (format_ != WireFormat::f32) {
            encode(format_, out_part, outgoing_.data());
            sending = outgoing_.data();
        }
        // Plain float32 that replaces: straight into place, no staging copy.
        void* receiving = format_ == WireFormat::f32 && !accumulate ? static_cast<void*>(in_part.data())
                                                                    : static_cast<void*>(incoming_.data());
        // An empty side (a range smaller than the number of ranks) is left out on both ends.
        Transfer transfers[2];
        std::size_t count = 0;
        if (!out_part.empty()) transfers[count++] = Transfer::send(to, sending, out_part.size() * width);
        if (!in_part.empty()) transfers[count++] = Transfer::recv(from, receiving, in_part.size() * width);
        transport_.exchange(std::span<const Transfer>(transfers, count));
        if (receiving == incoming_.data()) (accumulate ? decode_add : decode)(format_, incoming_.data(), in_part);
    }
}

void SegmentedExchange::round_to_wire(std::span<float> values) {
    if (format_ == WireFormat::f32) return;
    reserve(values.size());
    for (std::size_t offset = 0; offset < values.size(); offset += segment_elements_) {
        auto piece = values.subspan(offset, std::min(segment_elements_, values.size() - offset));
        encode(format_, piece, outgoing_.data());
        decode(format_, outgoing_.data(), piece);
    }
}

}  // namespace trellis::comm
