// The all-gather of the Slurm and environment wireups: rank 0 listens on a known host:port,
// the others connect to it and stay connected; each all-gather round, every rank sends its
// blob to rank 0, which answers with all of them.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/comm/socket.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

class RendezvousWireup : public Wireup {
public:
    // `master_host`: where rank 0 runs (rank 0 listens on all its addresses at `port`).
    RendezvousWireup(std::string name, Identity identity, std::string master_host, std::uint16_t port,
                     std::chrono::seconds timeout);

    std::string name() const override { return name_; }
    std::vector<std::string> all_gather(const std::string& mine) override;
    std::string reachable_address() const override { return address_; }

private:
    Clock::time_point deadline() const { return Clock::now() + timeout_; }

    std::string name_, master_host_, address_;
    std::chrono::seconds timeout_;
    std::vector<Socket> workers_;  // rank 0: the socket of rank i at i
    Socket master_;                // other ranks: the socket to rank 0
};

}  // namespace trellis::comm
