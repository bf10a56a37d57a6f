// SPDX-License-Identifier: Apache-2.0
// The TCP transport's connections, made to a peer when the rank first needs it (NCCL's rings
// and MPI's lazy connections do the same), so that a rank of a large job holds links to the
// few peers its schedules use rather than to every rank. A link is a control connection and
// `streams` data connections; either side may dial first. Two ranks that dial each other at
// once make one link: the control connection of the lower rank's dial is accepted, the other
// refused, and the refused dialer takes the winner's link. Every connection proves the step's
// secret both ways first (handshake.hpp). Incoming connections are greeted by the watcher
// thread (tcp_transport.hpp) through the gate (gate.hpp), so a rank accepts a link whatever
// its own thread is doing: a message sent before the receiver looks for it waits in the
// socket, as with a mesh.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "trainer/comm/gate.hpp"
#include "trainer/comm/socket.hpp"

namespace trellis::comm {

struct Endpoint {
    std::string address;
    std::uint16_t port = 0;
    std::string host;  // for messages
};

class TcpLinks {
public:
    // Listens on `address`, the one this rank advertises.
    TcpLinks(int rank, int size, int streams, const std::string& address, const JobSecret& secret);

    std::uint16_t port() const { return gate_.port(); }
    void set_endpoints(std::vector<Endpoint> endpoints) { endpoints_ = std::move(endpoints); }
    const Endpoint& endpoint(int peer) const { return endpoints_.at(std::size_t(peer)); }

    // Until `peer`'s link is whole, dialing it when nobody has. `check` runs every 100 ms
    // meanwhile and throws when the job has failed; a peer that cannot be reached, or that
    // does not complete the link by `deadline`, throws CommError naming it.
    void make(int peer, Clock::time_point deadline, const std::function<void()>& check);
    bool ready(int peer) const;
    const Socket& stream(int peer, int index) const { return links_[std::size_t(peer)].streams[std::size_t(index)]; }
    int streams() const { return streams_; }

    // For the watcher thread. The descriptors to wait on for new connections (the listener's
    // and those of callers not yet greeted), when to look again at the latest, and what to do
    // when one is readable (-1: the time came): greets, and returns the peer whose control
    // connection that completed, or -1.
    std::vector<int> greeting_fds() const { return gate_.fds(); }
    Clock::time_point next_greeting_event() const { return gate_.next_event(); }
    int greet(int fd);
    // Peers whose control connection is open, with it.
    std::vector<std::pair<int, int>> controls() const;
    const Socket& control(int peer) const { return links_[std::size_t(peer)].control; }

private:
    enum class State { none, dialing, linked, ready };
    struct Link {
        State state = State::none;
        Socket control;
        std::vector<Socket> streams;
        int attached = 0;  // streams of the peer's dial that have arrived
    };
    // Connects the control connection and asks; true when accepted.
    bool dial_control(int peer, Clock::time_point deadline, const std::function<void()>& check);
    void dial_streams(int peer, Clock::time_point deadline, const std::function<void()>& check);
    // A connection that has proven the claim; for the control connection, none when the peer's
    // own dial made the link while this one failed.
    Socket dial(int peer, std::int32_t stream, Clock::time_point deadline, const std::function<void()>& check);
    bool still_dialing(int peer) const;
    bool accepts(int caller);  // the tie-break, links_mutex_ held

    int rank_, size_, streams_;
    JobSecret secret_;
    Gate gate_;  // the watcher thread's alone
    std::vector<Endpoint> endpoints_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Link> links_;
};

}  // namespace trellis::comm
