// SPDX-License-Identifier: Apache-2.0
// The binomial tree over ranks 0..n-1 rooted at rank 0: a rank's parent is itself with its
// lowest set bit cleared, its children add each lower bit. Every edge joins ranks that differ
// in one bit, the partners of halving-doubling, so a job that uses both links the same peers;
// the depth is ceil(log2 n), and a child's subtree is the contiguous range [child, child + 2^k).
// The broadcast, the barrier and the rendezvous's all-gather walk it.
#pragma once

#include <algorithm>
#include <vector>

namespace trellis::comm {

struct BinomialTree {
    int rank, size;

    static int lowest_bit(int r) { return r & -r; }
    int parent() const { return rank & (rank - 1); }  // rank 0: itself
    // Largest subtree first: it has the furthest to pass the data on.
    std::vector<int> children() const {
        std::vector<int> found;
        int limit = rank == 0 ? size : lowest_bit(rank);
        for (int bit = 1; bit < limit && rank + bit < size; bit <<= 1) found.push_back(rank + bit);
        std::reverse(found.begin(), found.end());
        return found;
    }
    // One past the last rank of `child`'s subtree.
    int subtree_end(int child) const { return std::min(size, child + lowest_bit(child)); }
};

}  // namespace trellis::comm
