// SPDX-License-Identifier: Apache-2.0
// The all-gather of the Slurm and environment wireups. Rank 0 listens on a known host:port;
// every other rank listens on a port of its own and calls rank 0 once, briefly, to say where
// (rank 0 serves its callers side by side, so ranks need not reach it one at a time). With every
// rank's address known, rank 0 sends the table down the binomial tree (binomial_tree.hpp): a
// parent calls its children and the tree's connections stay, a rank holding one to its parent
// and one to each child, about log2 n. An all-gather then goes up the tree (each rank sends
// its subtree's blobs to its parent) and back down (each passes all of them on).
// Every call proves the step's secret both ways (handshake.hpp): a process that cannot is
// dropped, whether it calls a rank or holds rank 0's port, and the ranks go on waiting for the
// real ones until the timeout.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "trainer/comm/binomial_tree.hpp"
#include "trainer/comm/gate.hpp"
#include "trainer/comm/socket.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

class RendezvousWireup : public Wireup {
public:
    // `master_host`: where rank 0 runs (rank 0 listens on its address at `port`).
    RendezvousWireup(std::string name, Identity identity, JobSecret secret, std::string master_host, std::uint16_t port,
                     std::chrono::seconds timeout);

    std::string name() const override { return name_; }
    std::vector<std::string> all_gather(const std::string& mine) override;
    std::string reachable_address() const override { return address_; }

private:
    Clock::time_point deadline() const { return Clock::now() + timeout_; }
    // Rank 0: every other rank's "address:port", from their calls.
    std::vector<std::string> take_calls(Gate& gate, std::uint16_t port, Clock::time_point until);
    // Other ranks: says where this rank listens, then waits for its parent's call and the table.
    std::vector<std::string> call_rank0(std::uint16_t port);
    void call_children(const std::vector<std::string>& table);
    // Connects to host:port (first through `connected`, when given) and proves `claim`, again
    // until the deadline when the process there does not prove the secret.
    Socket call(const std::string& host, std::uint16_t port, const Claim& claim, int peer, Clock::time_point until,
                Socket connected = {});
    std::string what(int peer) const;

    std::string name_, master_host_, address_;
    std::chrono::seconds timeout_;
    BinomialTree tree_;
    Socket parent_;
    std::vector<Socket> children_;  // in the order of tree_.children()
};

}  // namespace trellis::comm
