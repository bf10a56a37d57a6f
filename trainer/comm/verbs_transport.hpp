// SPDX-License-Identifier: Apache-2.0
// InfiniBand verbs transport: one RC queue pair per peer, buffers registered once (a
// registration cache keyed by address and length), and a receiver-driven protocol: the
// receiver tells the sender where its buffer is (a small SEND: address, rkey, length), the
// sender writes the data there with RDMA WRITE, the last piece WITH IMMEDIATE so that the
// receiver's completion says the message is in. Queue-pair numbers, LIDs and GIDs are
// exchanged over the TCP transport (with every peer: a queue pair per peer is made at the
// start), which then also carries failure notices: a dead peer is seen there within moments.
#pragma once

#include <infiniband/verbs.h>

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "trainer/comm/tcp_transport.hpp"
#include "trainer/comm/verbs_device.hpp"

namespace trellis::comm {

class VerbsTransport : public Transport {
public:
    VerbsTransport(Wireup& wireup, TcpOptions tcp, const VerbsOptions& verbs);
    ~VerbsTransport() override;

    std::string name() const override { return "verbs"; }
    void exchange(std::span<const Transfer> transfers) override;
    std::size_t exchange_first(std::span<const Transfer> receives) override;
    void forget(const void* data, std::size_t bytes) override;
    const VerbsEndpoint& endpoint() const { return endpoint_; }

private:
    struct Notice {  // "write your next message here"
        std::uint64_t address;
        std::uint32_t rkey;
        std::uint32_t bytes;
    };
    struct Operation {
        Transfer transfer;
        bool started = false, done = false;
        int writes_left = 0;
        std::uint64_t completed_order = 0;
    };
    struct Peer {
        QueuePair qp;
        std::deque<Notice> notices;        // received, for our next sends
        std::deque<Operation*> receiving;  // our receives, in the order announced
        std::deque<Operation*> sending;    // our sends, waiting for their notice
        std::unique_ptr<Operation> first;  // exchange_first's receive still announced
        std::vector<Notice> slots;         // receive buffers for notices
    };

    void connect(Wireup& wireup);
    ibv_mr* registered(void* data, std::size_t bytes);
    void post_slot(int peer, std::size_t slot);
    void announce(int peer, Operation& receive);
    void start_sends(int peer);
    void progress();
    [[noreturn]] void fail(int peer, const std::string& what, bool silent = false);

    std::unique_ptr<TcpTransport> tcp_;
    TcpOptions options_;
    VerbsEndpoint endpoint_;
    // Made in this order, released in reverse: the queue pairs and registrations before the
    // completion queue, the domain and the device.
    VerbsContext context_;
    ProtectionDomain pd_;
    CompletionQueue cq_;
    std::vector<Peer> peers_;
    std::map<std::pair<std::uintptr_t, std::size_t>, MemoryRegion> registrations_;
    std::uint64_t completions_ = 0;
};

}  // namespace trellis::comm
