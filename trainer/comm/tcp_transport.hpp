// SPDX-License-Identifier: Apache-2.0
// TCP transport: links to the peers the schedules use, made when first needed (tcp_links.hpp),
// several streams per link so that large messages use several connections (and cores) at
// once, non-blocking sockets driven by poll(2). Each link has a control connection, read by a
// watcher thread of its own: heartbeats, goodbyes and failure notices. A rank links from the
// start to its watch peers (watch_graph.hpp); a watcher that sees a linked peer die or fall
// silent tells every rank it is linked to, and each passes the news on once, so that every
// rank names the failed one within a few hops, without a heartbeat between every pair.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/socket.hpp"
#include "trainer/comm/tcp_links.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

struct TcpOptions {
    int streams = 2;                          // per peer, for messages of split_threshold or more
    std::size_t split_threshold = 256 << 10;  // smaller messages use one stream
    std::chrono::seconds timeout{60};         // no heartbeat for this long: the peer is lost
    std::string interface_address;            // advertise this address; default: the wireup's
};

class TcpTransport : public Transport {
public:
    TcpTransport(Wireup& wireup, TcpOptions options);
    ~TcpTransport() override;

    std::string name() const override { return "tcp"; }
    void exchange(std::span<const Transfer> transfers) override;
    std::size_t exchange_first(std::span<const Transfer> receives) override;

    // For transports that use this one as their failure channel (verbs, shared memory):
    // makes the link to `peer` when there is none, so that its end or silence is seen.
    void link(int peer);
    // Throws the failure the watcher has heard of or seen (PeerFailure), if any.
    void check_peers();
    void announce(const std::string& notice);  // once: stops the heartbeats, sends `notice` to the links
    [[noreturn]] void fail(const PeerFailure& failure);
    // Whether `peer` has been silent (no heartbeat, no notice) for longer than the timeout:
    // a peer that is busy computing, evaluating or checkpointing still beats.
    bool silent(int peer, Clock::time_point last_progress) const;
    // Whether `peer` has said goodbye: it has ended, having sent all it meant to.
    bool finished(int peer) const { return peers_[std::size_t(peer)].finished; }
    // Of `receives` (from different peers), one whose message has begun to arrive, waiting at
    // most `wait`; none if none has. Throws PeerFailure when the job has failed meanwhile.
    std::optional<std::size_t> first_arriving(std::span<const Transfer> receives, std::chrono::milliseconds wait);
    // The peers this rank is linked to now.
    int links() const { return int(links_.controls().size()); }

private:
    // What the watcher knows of a peer, read by any thread.
    struct Peer {
        std::atomic<bool> finished{false};  // said goodbye: its closing is not a failure
        std::atomic<bool> closed{false};    // its control connection has ended
        std::atomic<Clock::rep> last_heard{Clock::now().time_since_epoch().count()};
    };
    struct Progress;

    // The watcher thread (tcp_watch.cpp).
    void watch();
    void read_control(int peer, int fd);
    void beat_and_look_for_silence();
    // Control messages: a 32-bit length, then that many bytes of failure notice; length 0 is
    // goodbye, heartbeat_length a heartbeat. Sent whole, by one thread at a time.
    void send_control(int fd, std::uint32_t length, const std::string& notice = {});
    // Keeps the first failure for the main thread, and wakes it.
    void record(std::exception_ptr failure);
    void report(const PeerFailure& failure);  // records it and announces it
    void welcome(int peer);                   // a new link: the notice announced, if any
    // A peer's connection ended under the main thread: what the watcher makes of it, or that.
    [[noreturn]] void peer_ended(int peer, const std::string& how);
    void stop_watching();

    TcpOptions options_;
    TcpLinks links_;
    std::vector<Peer> peers_;
    std::atomic<bool> announced_{false};
    std::atomic<bool> failed_{false};  // a failure is recorded
    bool thrown_ = false;              // the main thread has thrown it: no goodbye then
    std::mutex failure_mutex_;
    std::exception_ptr failure_;
    int news_fd_ = -1;          // readable once a failure is recorded
    int wake_fd_ = -1;          // wakes the watcher: a new link, or the end
    std::mutex control_mutex_;  // one sender on the control connections; notice_
    std::string notice_;        // what was announced
    std::atomic<bool> stopping_{false};
    std::thread watcher_;
};

}  // namespace trellis::comm
