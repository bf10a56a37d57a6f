// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/rendezvous.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <thread>

#include "common/cli.hpp"
#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

constexpr auto recall_pause = std::chrono::milliseconds(100);

void send_blob(const Socket& socket, const std::string& blob, Clock::time_point deadline, const std::string& what) {
    std::uint32_t length = std::uint32_t(blob.size());
    socket.send_all(&length, sizeof length, deadline, what);
    socket.send_all(blob.data(), blob.size(), deadline, what);
}

std::string recv_blob(const Socket& socket, Clock::time_point deadline, const std::string& what,
                      std::uint32_t longest = 64u << 20) {
    std::uint32_t length = 0;
    socket.recv_all(&length, sizeof length, deadline, what);
    if (length > longest) throw CommError(what + ": announced a blob of " + std::to_string(length) + " bytes");
    std::string blob(length, '\0');
    socket.recv_all(blob.data(), length, deadline, what);
    return blob;
}

// A list of blobs: their count, then each.
void send_blobs(const Socket& socket, std::span<const std::string> blobs, Clock::time_point deadline,
                const std::string& what) {
    std::uint32_t count = std::uint32_t(blobs.size());
    socket.send_all(&count, sizeof count, deadline, what);
    for (const auto& blob : blobs) send_blob(socket, blob, deadline, what);
}

void recv_blobs(const Socket& socket, std::size_t expected, std::vector<std::string>& into, Clock::time_point deadline,
                const std::string& what, std::uint32_t longest = 64u << 20) {
    std::uint32_t count = 0;
    socket.recv_all(&count, sizeof count, deadline, what);
    if (count != expected)
        throw CommError(what + ": sent " + std::to_string(count) + " blobs where " + std::to_string(expected) +
                        " were due");
    for (std::size_t i = 0; i < expected; ++i) into.push_back(recv_blob(socket, deadline, what, longest));
}

}  // namespace

RendezvousWireup::RendezvousWireup(std::string name, Identity identity, JobSecret secret, std::string master_host,
                                   std::uint16_t port, std::chrono::seconds timeout)
    : name_(std::move(name)),
      master_host_(std::move(master_host)),
      timeout_(timeout),
      tree_{identity.rank, identity.size} {
    identity_ = std::move(identity);
    secret_ = std::move(secret);
    if (identity_.size < 1 || identity_.rank < 0 || identity_.rank >= identity_.size)
        throw CommError(name_ + " wireup: rank " + std::to_string(identity_.rank) + " outside a world of " +
                        std::to_string(identity_.size));
    if (identity_.rank == 0) {
        address_ = resolve_ipv4(master_host_);
        if (identity_.size == 1) return;
        // Rank 0 listens where the others dial, the master's address. A name this node resolves
        // to loopback (Debian's 127.0.1.1 for the host's own name) is another address to the
        // others: then it listens on all of its addresses.
        bool loopback_name = address_.starts_with("127.") && master_host_ != address_;
        auto until = deadline();
        // A process that holds the port first is waited out: it cannot pass for rank 0.
        Gate gate(loopback_name ? "0.0.0.0" : address_, port, secret_, Expected{Purpose::join, 0, identity_.size, 0},
                  name_ + " rendezvous, rank 0", until);
        call_children(take_calls(gate, port, until));
    } else {
        call_children(call_rank0(port));
    }
}

std::string RendezvousWireup::what(int peer) const {
    return name_ + " rendezvous: rank " + std::to_string(peer) +
           (peer == 0 ? " (" + master_host_ + ")" : " (tree of rank " + std::to_string(identity_.rank) + ")");
}

std::vector<std::string> RendezvousWireup::take_calls(Gate& gate, std::uint16_t port, Clock::time_point until) {
    std::vector<std::string> table(std::size_t(identity_.size));
    table[0] = address_ + ":" + std::to_string(port);
    for (int joined = 1; joined < identity_.size;) {
        auto caller = gate.admit(until, name_ + " rendezvous on port " + std::to_string(port) + " (" +
                                            std::to_string(joined - 1) + " of " + std::to_string(identity_.size - 1) +
                                            " ranks joined)");
        auto& slot = table[std::size_t(caller.claim.caller)];
        // A rank whose call this one answered too late calls again, saying the same.
        if (!slot.empty() && slot == caller.claim.payload) continue;
        // Both proved the secret: two ranks of this step were given one number.
        if (!slot.empty())
            throw CommError(name_ + " rendezvous: two processes of this step claim rank " +
                            std::to_string(caller.claim.caller) + " (world of " + std::to_string(identity_.size) + ")");
        if (caller.claim.payload.empty()) continue;
        slot = caller.claim.payload;
        ++joined;
    }
    return table;
}

Socket RendezvousWireup::call(const std::string& host, std::uint16_t port, const Claim& claim, int peer,
                              Clock::time_point until, Socket connected) {
    for (bool said = false;; said = true) {
        auto socket = connected.valid() ? std::move(connected) : connect_to(host, port, until);
        try {
            prove_claim(socket, secret_, claim, until, what(peer));
            return socket;
        } catch (const CommError& error) {
            if (Clock::now() >= until) throw;
            // The real rank may be behind a full gate, or the port held by another process
            // until it lets go.
            if (!said) std::fprintf(stderr, "trellis: %s; trying again\n", error.what());
        }
        std::this_thread::sleep_for(recall_pause);
    }
}

std::vector<std::string> RendezvousWireup::call_rank0(std::uint16_t port) {
    auto until = deadline();
    // The gate listens on the address this rank reaches rank 0 from, which it advertises, until
    // the parent has called.
    std::optional<Gate> gate;
    {
        auto master = connect_to(master_host_, port, until);
        address_ = master.local_address();
        gate.emplace(address_, 0, secret_, Expected{Purpose::parent, identity_.rank, identity_.size, 0, tree_.parent()},
                     name_ + " rendezvous, rank " + std::to_string(identity_.rank));
        call(master_host_, port,
             Claim{Purpose::join, identity_.rank, 0, -1, identity_.size, address_ + ":" + std::to_string(gate->port())},
             0, until, std::move(master));
    }
    // The parent calls once rank 0 has heard from every rank.
    int parent = tree_.parent();
    auto caller = gate->admit(until, name_ + " rendezvous: waiting for rank " + std::to_string(parent) +
                                         " to pass on where every rank listens");
    std::vector<std::string> table;
    recv_blobs(caller.socket, std::size_t(identity_.size), table, until, what(parent), longest_payload);
    parent_ = std::move(caller.socket);
    return table;
}

void RendezvousWireup::call_children(const std::vector<std::string>& table) {
    auto until = deadline();
    for (int child : tree_.children()) {
        const auto& where = table[std::size_t(child)];
        auto colon = where.rfind(':');
        if (colon == std::string::npos) throw CommError(what(child) + ": no address in the table");
        auto socket = call(where.substr(0, colon),
                           cli::parse_int<std::uint16_t>(where.substr(colon + 1), "a rank's rendezvous port", 1),
                           Claim{Purpose::parent, identity_.rank, child, -1, identity_.size, {}}, child, until);
        send_blobs(socket, table, until, what(child));
        children_.push_back(std::move(socket));
    }
}

std::vector<std::string> RendezvousWireup::all_gather(const std::string& mine) {
    auto until = deadline();
    if (identity_.size == 1) return {mine};
    // Up: this rank's subtree, [rank, subtree end), in rank order; the children's subtrees
    // follow this rank's in increasing order of the children.
    std::vector<std::string> blobs{mine};
    auto children = tree_.children();
    for (std::size_t c = children.size(); c-- > 0;)
        recv_blobs(children_[c], std::size_t(tree_.subtree_end(children[c]) - children[c]), blobs, until,
                   what(children[c]));
    if (identity_.rank != 0) {
        send_blobs(parent_, blobs, until, what(tree_.parent()));
        blobs.clear();
        recv_blobs(parent_, std::size_t(identity_.size), blobs, until, what(tree_.parent()));
    }
    // Down: all of them, to each child.
    for (std::size_t c = 0; c < children.size(); ++c) send_blobs(children_[c], blobs, until, what(children[c]));
    return blobs;
}

}  // namespace trellis::comm
