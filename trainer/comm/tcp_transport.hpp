// TCP transport: a full mesh of connections, several streams per peer so that large messages
// use several connections (and cores) at once, non-blocking sockets driven by poll(2), and a
// control connection per peer that carries failure notices and reveals a dead peer at once.
#pragma once

#include <chrono>
#include <optional>

#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/socket.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

struct TcpOptions {
    int streams = 2;                          // per peer, for messages of split_threshold or more
    std::size_t split_threshold = 256 << 10;  // smaller messages use one stream
    std::chrono::seconds timeout{60};         // no progress for this long: the peer is lost
    std::string interface_address;            // advertise this address; default: the IPv4
                                              // address of NCCL_SOCKET_IFNAME (IPoIB), else the wireup's
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
    [[noreturn]] void fail(const PeerFailure& failure);

private:
    struct Peer {
        std::vector<Socket> streams;
        Socket control;
        bool finished = false;  // said goodbye: its closing is not a failure
    };
    struct Progress;

    void connect_mesh(Wireup& wireup);
    void check_control(int peer);

    TcpOptions options_;
    std::vector<Peer> peers_;
    bool failed_ = false;
};

}  // namespace trellis::comm
