#include "trainer/comm/ring_allreduce.hpp"

#include <algorithm>

namespace trellis::comm {

RingAllreduce::RingAllreduce(Transport& transport, std::size_t segment_bytes)
    : transport_(transport), segment_elements_(std::max<std::size_t>(segment_bytes / sizeof(float), 1024)) {}

void RingAllreduce::sum(std::span<float> data) {
    const int n = transport_.size(), rank = transport_.rank();
    if (n == 1 || data.empty()) return;
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    // Chunk c covers [begin(c), begin(c + 1)): sizes differ by at most one element.
    auto begin = [&](int c) { return data.size() * std::size_t(c) / std::size_t(n); };
    auto chunk = [&](int c) {
        c = ((c % n) + n) % n;
        return data.subspan(begin(c), begin(c + 1) - begin(c));
    };
    incoming_.resize(std::min(segment_elements_, data.size() / std::size_t(n) + 1));

    // Reduce-scatter: after step s, chunk (rank - s - 1) holds the sum of s + 2 ranks.
    for (int step = 0; step < n - 1; ++step) {
        auto out = chunk(rank - step), in = chunk(rank - step - 1);
        for (std::size_t offset = 0; offset < std::max(out.size(), in.size()); offset += segment_elements_) {
            auto out_part = out.subspan(std::min(offset, out.size()));
            out_part = out_part.first(std::min(out_part.size(), segment_elements_));
            auto in_part = in.subspan(std::min(offset, in.size()));
            in_part = in_part.first(std::min(in_part.size(), segment_elements_));
            Transfer transfers[] = {Transfer::send(right, out_part.data(), out_part.size_bytes()),
                                    Transfer::recv(left, incoming_.data(), in_part.size_bytes())};
            transport_.exchange(transfers);
            for (std::size_t i = 0; i < in_part.size(); ++i) in_part[i] += incoming_[i];
        }
    }
    // Allgather: rank r now owns the finished chunk r + 1 and passes finished chunks on.
    for (int step = 0; step < n - 1; ++step) {
        auto out = chunk(rank + 1 - step), in = chunk(rank - step);
        Transfer transfers[] = {Transfer::send(right, out.data(), out.size_bytes()),
                                Transfer::recv(left, in.data(), in.size_bytes())};
        transport_.exchange(transfers);
    }
}

}  // namespace trellis::comm
