// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/ring_allreduce.hpp"

namespace trellis::comm {

namespace {

// Chunk c (taken modulo n): sizes differ by at most one element.
std::span<float> chunk(std::span<float> data, int n, int c) {
    c = ((c % n) + n) % n;
    auto begin = [&](int k) { return data.size() * std::size_t(k) / std::size_t(n); };
    return data.subspan(begin(c), begin(c + 1) - begin(c));
}

}  // namespace

std::span<float> ring_reduce_scatter(SegmentedExchange& exchange, int rank, int n, std::span<float> data) {
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    // After step s, chunk (rank - s - 1) holds the sum of s + 2 ranks.
    for (int s = 0; s < n - 1; ++s)
        exchange.exchange(right, chunk(data, n, rank - s), left, chunk(data, n, rank - s - 1), true);
    return chunk(data, n, rank + 1);
}

void ring_allgather(SegmentedExchange& exchange, int rank, int n, std::span<float> data) {
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    // Rank r owns the finished chunk r + 1 and passes finished chunks on.
    for (int s = 0; s < n - 1; ++s)
        exchange.exchange(right, chunk(data, n, rank + 1 - s), left, chunk(data, n, rank - s), false);
}

void RingAllreduce::sum(std::span<float> data) {
    const int n = transport_.size(), rank = transport_.rank();
    if (n == 1 || data.empty()) return;
    exchange_.round_to_wire(ring_reduce_scatter(exchange_, rank, n, data));
    ring_allgather(exchange_, rank, n, data);
}

}  // namespace trellis::comm
