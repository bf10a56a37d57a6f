// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/watch_graph.hpp"

#include <algorithm>

namespace trellis::comm {

std::vector<int> watch_peers(int rank, int size) {
    std::vector<int> peers;
    if (size < 2) return peers;
    peers.push_back((rank + 1) % size);
    peers.push_back((rank + size - 1) % size);
    for (int bit = 1; bit < size; bit <<= 1)
        if ((rank ^ bit) < size) peers.push_back(rank ^ bit);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    std::erase(peers, rank);
    return peers;
}

}  // namespace trellis::comm
