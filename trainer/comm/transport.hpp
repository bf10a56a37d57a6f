// SPDX-License-Identifier: Apache-2.0
// The transport interface the collectives are written against (as in Gloo): point-to-point
// transfers between ranks, run concurrently by exchange(). TCP and InfiniBand verbs implement
// it; RingAllreduce and the parameter server do not know which one they use.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace trellis::comm {

struct Transfer {
    enum class Kind { send, recv };
    Kind kind;
    int peer;
    void* data;
    std::size_t bytes;

    static Transfer send(int peer, const void* data, std::size_t bytes) {
        return {Kind::send, peer, const_cast<void*>(data), bytes};
    }
    static Transfer recv(int peer, void* data, std::size_t bytes) { return {Kind::recv, peer, data, bytes}; }
};

class Transport {
public:
    virtual ~Transport() = default;
    virtual std::string name() const = 0;
    int rank() const { return rank_; }
    int size() const { return size_; }
    const std::string& host_of(int rank) const { return hosts_.at(std::size_t(rank)); }

    // Runs all transfers at once and returns when every one is complete. Between two ranks,
    // messages in one direction are matched in the order they are posted, and both sides
    // give the same size. A dead, failed or silent peer throws PeerFailure naming it, after
    // telling the other ranks, so that they stop too.
    virtual void exchange(std::span<const Transfer> transfers) = 0;

    // Receives whichever of `receives` (from different peers) starts arriving first, in
    // full, and returns its index; the others are left for later calls. For servers that
    // answer workers in the order they come (the asynchronous parameter server).
    virtual std::size_t exchange_first(std::span<const Transfer> receives) = 0;

    // Memory given to transfers may stay registered with the network device (verbs keeps
    // registrations by address and length, and a registration holds on to the pages it was
    // made for). Whoever frees such memory calls this first, so that a later buffer at the
    // same address is registered afresh instead of being taken for the old one.
    virtual void forget(const void* data, std::size_t bytes) {
        (void)data;
        (void)bytes;
    }

protected:
    int rank_ = 0, size_ = 1;
    std::vector<std::string> hosts_;
};

}  // namespace trellis::comm
