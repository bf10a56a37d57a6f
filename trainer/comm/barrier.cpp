// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/barrier.hpp"

#include "trainer/comm/binomial_tree.hpp"

namespace trellis::comm {

void barrier(Transport& transport) {
    BinomialTree tree{transport.rank(), transport.size()};
    char signal = 1;
    auto children = tree.children();
    std::vector<char> heard(children.size());
    std::vector<Transfer> from_children;
    for (std::size_t c = 0; c < children.size(); ++c)
        from_children.push_back(Transfer::recv(children[c], &heard[c], 1));
    if (!from_children.empty()) transport.exchange(from_children);
    if (tree.rank != 0) {
        Transfer up[] = {Transfer::send(tree.parent(), &signal, 1)},
                 down[] = {Transfer::recv(tree.parent(), &signal, 1)};
        transport.exchange(up);
        transport.exchange(down);
    }
    std::vector<Transfer> to_children;
    for (int child : children) to_children.push_back(Transfer::send(child, &signal, 1));
    if (!to_children.empty()) transport.exchange(to_children);
}

}  // namespace trellis::comm
