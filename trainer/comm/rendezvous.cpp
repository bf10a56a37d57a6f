// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/rendezvous.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>

#include "common/cli.hpp"
#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

// What a rank says first when it calls rank 0, then its "address:port" as a blob; and what a
// parent says when it calls a child, then the table of every rank's "address:port".
struct Greeting {
    std::uint32_t magic;
    std::int32_t rank;  // the caller's
    std::int32_t size;
};
constexpr std::uint32_t join_magic = 0x544c5253;    // "TRLS"
constexpr std::uint32_t parent_magic = 0x544c5250;  // "TRLP"
constexpr auto greeting_time = std::chrono::seconds(5);

void send_blob(const Socket& socket, const std::string& blob, Clock::time_point deadline, const std::string& what) {
    std::uint32_t length = std::uint32_t(blob.size());
    socket.send_all(&length, sizeof length, deadline, what);
    socket.send_all(blob.data(), blob.size(), deadline, what);
}

std::string recv_blob(const Socket& socket, Clock::time_point deadline, const std::string& what) {
    std::uint32_t length = 0;
    socket.recv_all(&length, sizeof length, deadline, what);
    if (length > (64u << 20)) throw CommError(what + ": announced a blob of " + std::to_string(length) + " bytes");
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
                const std::string& what) {
    std::uint32_t count = 0;
    socket.recv_all(&count, sizeof count, deadline, what);
    if (count != expected)
        throw CommError(what + ": sent " + std::to_string(count) + " blobs where " + std::to_string(expected) +
                        " were due");
    for (std::size_t i = 0; i < expected; ++i) into.push_back(recv_blob(socket, deadline, what));
}

}  // namespace

RendezvousWireup::RendezvousWireup(std::string name, Identity identity, std::string master_host, std::uint16_t port,
                                   std::chrono::seconds timeout)
    : name_(std::move(name)),
      master_host_(std::move(master_host)),
      timeout_(timeout),
      tree_{identity.rank, identity.size} {
    identity_ = std::move(identity);
    if (identity_.size < 1 || identity_.rank < 0 || identity_.rank >= identity_.size)
        throw CommError(name_ + " wireup: rank " + std::to_string(identity_.rank) + " outside a world of " +
                        std::to_string(identity_.size));
    if (identity_.rank == 0) {
        address_ = resolve_ipv4(master_host_);
        if (identity_.size == 1) return;
        Listener listener("0.0.0.0", port);
        call_children(take_calls(listener, port));
    } else {
        Listener listener("0.0.0.0", 0);
        call_children(call_rank0(listener, port));
    }
}

std::string RendezvousWireup::what(int peer) const {
    return name_ + " rendezvous: rank " + std::to_string(peer) +
           (peer == 0 ? " (" + master_host_ + ")" : " (tree of rank " + std::to_string(identity_.rank) + ")");
}

std::vector<std::string> RendezvousWireup::take_calls(Listener& listener, std::uint16_t port) {
    auto until = deadline();
    std::vector<std::string> table(std::size_t(identity_.size));
    table[0] = address_ + ":" + std::to_string(port);
    for (int joined = 1; joined < identity_.size;) {
        auto socket = listener.accept(until, name_ + " rendezvous on port " + std::to_string(port) + " (" +
                                                 std::to_string(joined - 1) + " of " +
                                                 std::to_string(identity_.size - 1) + " ranks joined)");
        // Anything can connect to an open port: a caller that does not greet like a rank of
        // this job (another job on a reused port, a scanner) is dropped, not fatal.
        Greeting greeting{};
        std::string where;
        try {
            auto briefly = std::min(until, Clock::now() + greeting_time);
            socket.recv_all(&greeting, sizeof greeting, briefly, "rendezvous");
            if (greeting.magic == join_magic && greeting.size == identity_.size)
                where = recv_blob(socket, briefly, "rendezvous");
        } catch (const CommError&) {
            continue;
        }
        if (greeting.magic != join_magic || greeting.size != identity_.size || where.empty()) {
            std::fprintf(stderr, "trellis: %s rendezvous: ignored a connection that is not a rank of this job\n",
                         name_.c_str());
            continue;
        }
        if (greeting.rank <= 0 || greeting.rank >= identity_.size || !table[std::size_t(greeting.rank)].empty())
            throw CommError(name_ + " rendezvous: two processes claim rank " + std::to_string(greeting.rank) +
                            " (world of " + std::to_string(identity_.size) + ")");
        table[std::size_t(greeting.rank)] = where;
        ++joined;
    }
    return table;
}

std::vector<std::string> RendezvousWireup::call_rank0(Listener& listener, std::uint16_t port) {
    auto until = deadline();
    {
        auto master = connect_to(master_host_, port, until);
        address_ = master.local_address();
        Greeting greeting{join_magic, identity_.rank, identity_.size};
        master.send_all(&greeting, sizeof greeting, until, what(0));
        send_blob(master, address_ + ":" + std::to_string(listener.port()), until, what(0));
    }
    // The parent calls once rank 0 has heard from every rank: strays are dropped meanwhile.
    int parent = tree_.parent();
    while (true) {
        auto socket = listener.accept(until, name_ + " rendezvous: waiting for rank " + std::to_string(parent) +
                                                 " to pass on where every rank listens");
        Greeting greeting{};
        std::vector<std::string> table;
        try {
            auto briefly = std::min(until, Clock::now() + greeting_time);
            socket.recv_all(&greeting, sizeof greeting, briefly, what(parent));
            if (greeting.magic != parent_magic || greeting.rank != parent || greeting.size != identity_.size) continue;
            recv_blobs(socket, std::size_t(identity_.size), table, until, what(parent));
        } catch (const CommError&) {
            continue;
        }
        parent_ = std::move(socket);
        return table;
    }
}

void RendezvousWireup::call_children(const std::vector<std::string>& table) {
    auto until = deadline();
    for (int child : tree_.children()) {
        const auto& where = table[std::size_t(child)];
        auto colon = where.rfind(':');
        auto socket =
            connect_to(where.substr(0, colon),
                       cli::parse_int<std::uint16_t>(where.substr(colon + 1), "a rank's rendezvous port", 1), until);
        Greeting greeting{parent_magic, identity_.rank, identity_.size};
        socket.send_all(&greeting, sizeof greeting, until, what(child));
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
