#include "trainer/comm/ring_allreduce.hpp"

namespace trellis::comm {

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
    // Reduce-scatter: after step s, chunk (rank - s - 1) holds the sum of s + 2 ranks.
    for (int s = 0; s < n - 1; ++s) exchange_.exchange(right, chunk(rank - s), left, chunk(rank - s - 1), true);
    exchange_.round_to_wire(chunk(rank + 1));
    // Allgather: rank r now owns the finished chunk r + 1 and passes finished chunks on.
    for (int s = 0; s < n - 1; ++s) exchange_.exchange(right, chunk(rank + 1 - s), left, chunk(rank - s), false);
}

}  // namespace trellis::comm
