#include "trainer/comm/ring_allreduce.hpp"

#include <algorithm>

namespace trellis::comm {

RingAllreduce::RingAllreduce(Transport& transport, std::size_t segment_bytes, WireFormat format)
    : transport_(transport), segment_elements_(std::max<std::size_t>(segment_bytes / sizeof(float), 1024)),
      format_(format) {}

void RingAllreduce::step(std::span<float> out, std::span<float> in, bool accumulate) {
    const int n = transport_.size(), rank = transport_.rank();
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    const std::size_t width = wire_bytes(format_);
    auto part = [&](std::span<float> chunk, std::size_t offset) {
        auto rest = chunk.subspan(std::min(offset, chunk.size()));
        return rest.first(std::min(rest.size(), segment_elements_));
    };
    for (std::size_t offset = 0; offset < std::max(out.size(), in.size()); offset += segment_elements_) {
        auto out_part = part(out, offset), in_part = part(in, offset);
        const void* sending = out_part.data();
        if (format_ != WireFormat::f32) {
            encode(format_, out_part, outgoing_.data());
            sending = outgoing_.data();
        }
        // Plain float32 that replaces: straight into place, no staging copy.
        void* receiving = format_ == WireFormat::f32 && !accumulate ? static_cast<void*>(in_part.data())
                                                                    : static_cast<void*>(incoming_.data());
        Transfer transfers[] = {Transfer::send(right, sending, out_part.size() * width),
                                Transfer::recv(left, receiving, in_part.size() * width)};
        transport_.exchange(transfers);
        if (receiving == incoming_.data())
            (accumulate ? decode_add : decode)(format_, incoming_.data(), in_part);
    }
}

void RingAllreduce::sum(std::span<float> data) {
    const int n = transport_.size(), rank = transport_.rank();
    if (n == 1 || data.empty()) return;
    // Chunk c covers [begin(c), begin(c + 1)): sizes differ by at most one element.
    auto begin = [&](int c) { return data.size() * std::size_t(c) / std::size_t(n); };
    auto chunk = [&](int c) {
        c = ((c % n) + n) % n;
        return data.subspan(begin(c), begin(c + 1) - begin(c));
    };
    std::size_t staging = std::min(segment_elements_, data.size() / std::size_t(n) + 1) * sizeof(float);
    if (incoming_.size() < staging) incoming_.resize(staging);
    if (outgoing_.size() < staging) outgoing_.resize(staging);

    // Reduce-scatter: after step s, chunk (rank - s - 1) holds the sum of s + 2 ranks.
    for (int s = 0; s < n - 1; ++s) step(chunk(rank - s), chunk(rank - s - 1), true);
    // Compressed values are rounded once by their owner, so that every rank ends equal.
    if (format_ != WireFormat::f32) {
        auto owned = chunk(rank + 1);
        for (std::size_t offset = 0; offset < owned.size(); offset += segment_elements_) {
            auto piece = owned.subspan(offset, std::min(segment_elements_, owned.size() - offset));
            encode(format_, piece, outgoing_.data());
            decode(format_, outgoing_.data(), piece);
        }
    }
    // Allgather: rank r now owns the finished chunk r + 1 and passes finished chunks on.
    for (int s = 0; s < n - 1; ++s) step(chunk(rank + 1 - s), chunk(rank - s), false);
}

}  // namespace trellis::comm
