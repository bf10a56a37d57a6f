// TCP transport: a full mesh of connections, several streams per peer so that large messages
// use several connections (and cores) at once, non-blocking sockets driven by poll(2), and a
// control connection per peer that carries failure notices and reveals a dead peer at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/socket.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

struct TcpOptions {
    int streams = 2;                          // per peer, for messages of split_threshold or more
    std::size_t split_threshold = 256 << 10;  // smaller messages use one stream
    std::chrono::seconds timeout{60};         // no progress for this long: the peer is lost
    std::string interface_address;            // advertise this address; default: the wireup's
};

class TcpTransport : public Transport {
public:
    TcpTransport(Wireup& wireup, TcpOptions options);
    ~TcpTransport() override;

    std::string name() const override { return "tcp"; }
    void exchange(std::span<const Transfer> transfers) override;
    std::size_t exchange_first(std::span<const Transfer> receives) override;

    // For a transport that uses this one as its failure channel (verbs): reads any failure
    // notice or closed connection without blocking (throws PeerFailure), and reports a
    // failure to every other rank before throwing it.
    void check_peers();
    void announce(const std::string& notice);  // once: stops the heartbeats, sends `notice` to all
    [[noreturn]] void fail(const PeerFailure& failure);
    // Whether `peer` has been silent (no heartbeat, no notice) for longer than the timeout:
    // a peer that is busy computing, evaluating or checkpointing still beats.
    bool silent(int peer, Clock::time_point last_progress) const;
    // Whether `peer` has said goodbye: it has ended, having sent all it meant to.
    bool finished(int peer) const { return peers_.at(std::size_t(peer)).finished; }
    // Of `receives` (from different peers), one whose message has begun to arrive, waiting at
    // most `wait`; none if none has. Control messages are read meanwhile (throws PeerFailure).
    std::optional<std::size_t> first_arriving(std::span<const Transfer> receives, std::chrono::milliseconds wait);

private:
    struct Peer {
        std::vector<Socket> streams;
        Socket control;
        bool finished = false;  // said goodbye: its closing is not a failure
        Clock::time_point last_heard = Clock::now();
    };
    struct Progress;

    void connect_mesh(Wireup& wireup);
    void check_control(int peer);
    // Control messages: a 32-bit length, then that many bytes of failure notice; length 0 is
    // goodbye, heartbeat_length a heartbeat. Sent whole, by one thread at a time.
    void send_control(int peer, std::uint32_t length, const std::string& notice = {});
    void beat();

    TcpOptions options_;
    std::vector<Peer> peers_;
    bool failed_ = false;
    std::mutex control_mutex_;
    std::condition_variable stop_beating_;
    bool stopping_ = false;
    std::thread heartbeat_;
};

}  // namespace trellis::comm
