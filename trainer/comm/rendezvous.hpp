// SPDX-License-Identifier: Apache-2.0
// The all-gather of the Slurm and environment wireups. Rank 0 listens on a known host:port;
// every other rank listens on a port of its own and calls rank 0 once, briefly, to say where
// (rank 0 holds one caller at a time, so ranks need not all reach it at once). With every
// rank's address known, rank 0 sends the table down the binomial tree (binomial_tree.hpp): a
// parent calls its children and the tree's connections stay, a rank holding one to its parent
// and one to each child, about log2 n. An all-gather then goes up the tree (each rank sends
// its subtree's blobs to its parent) and back down (each passes all of them on).
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/comm/binomial_tree.hpp"
#include "trainer/comm/socket.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

class RendezvousWireup : public Wireup {
public:
    // `master_host`: where rank 0 runs (rank 0 listens on all its addresses at `port`).
    RendezvousWireup(std::string name, Identity identity, std::string master_host, std::uint16_t port,
                     std::chrono::seconds timeout);

    std::string name() const override { return name_; }
    std::vector<std::string> all_gather(const std::string& mine) override;
    std::string reachable_address() const override { return address_; }

private:
    Clock::time_point deadline() const { return Clock::now() + timeout_; }
    // Rank 0: every other rank's "address:port", from their calls.
    std::vector<std::string> take_calls(Listener& listener, std::uint16_t port);
    // Other ranks: says where this rank listens, then waits for its parent's call and the table.
    std::vector<std::string> call_rank0(Listener& listener, std::uint16_t port);
    void call_children(const std::vector<std::string>& table);
    std::string what(int peer) const;

    std::string name_, master_host_, address_;
    std::chrono::seconds timeout_;
    BinomialTree tree_;
    Socket parent_;
    std::vector<Socket> children_;  // in the order of tree_.children()
};

}  // namespace trellis::comm
