// SPDX-License-Identifier: Apache-2.0
// Shared memory between the ranks of a node, TCP to the others. Each rank has a mailbox in
// /dev/shm (shm_mailbox.hpp) with an inbound ring per rank of its node: a message is copied into
// the receiver's ring by the sender and out of it by the receiver, a slot at a time, both
// running at once, with no system call but a futex wake per pass. The ranks of a node are those
// whose wireup names the same host and whose kernels have the same boot id.
//
// The TCP transport carries the messages to ranks elsewhere and every rank's failure notices
// and heartbeats: a rank links over TCP to each peer it exchanges with, on its node or not, so
// that a rank that dies is named by the others within moments whether it shared their node or not.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "trainer/comm/shm_mailbox.hpp"
#include "trainer/comm/tcp_transport.hpp"

namespace trellis::comm {

class SharedMemoryTransport : public Transport {
public:
    // Collective. Throws CommError on every rank, with the same message, when a rank of a
    // node cannot make or map its mailbox.
    SharedMemoryTransport(Wireup& wireup, TcpOptions tcp, ShmLayout layout = {});
    ~SharedMemoryTransport() override;

    // "shm" when the whole job shares one node, "shm+tcp" when it spans nodes.
    std::string name() const override;
    void exchange(std::span<const Transfer> transfers) override;
    std::size_t exchange_first(std::span<const Transfer> receives) override;

    bool same_node(int peer) const { return node_index_.at(std::size_t(peer)) >= 0; }

private:
    struct Pending {
        const Transfer* transfer;
        std::size_t done = 0;
    };
    void set_up_mailboxes(Wireup& wireup, ShmLayout layout);
    // Copies what the rings allow for each transfer that may move (the first unfinished one per
    // peer and direction, so that messages keep their order); true if any byte moved.
    bool move(std::vector<Pending>& pending);
    bool send_some(Pending& pending);
    bool receive_some(Pending& pending);
    bool arriving(const Transfer& receive);
    // Waits for the doorbell (rung at `seen`) and checks the peers' health meanwhile; with
    // `tcp_busy`, TCP's own exchange is watching the control connections.
    void wait(std::uint32_t seen, const std::vector<Pending>& pending, Clock::time_point last_progress, bool tcp_busy);
    // Fails (naming the peer, after telling the others) when a peer of an unfinished transfer
    // has ended or has been silent for the timeout.
    void check_pending(const std::vector<Pending>& pending, Clock::time_point last_progress);

    std::string seconds() const;  // the timeout, for messages

    std::chrono::seconds timeout_;
    std::unique_ptr<TcpTransport> tcp_;
    std::vector<int> node_index_;  // per rank: its index among this node's ranks, -1 elsewhere
    int local_ranks_ = 1;
    std::optional<ShmMailbox> own_;
    std::vector<std::optional<ShmMailbox>> mailboxes_;  // per rank of this node: its mailbox, mapped
};

}  // namespace trellis::comm
