// SPDX-License-Identifier: Apache-2.0
// A job's ranks as threads of the test process, each with its own wireup and transport: they
// meet through an all-gather in memory, so no port is fixed and test runs side by side never
// meet. Each transport listens on a port the kernel picks and publishes it through the
// all-gather, as it does under every wireup. The ranks' hosts are given, so that the shared
// memory transport can be shown several nodes.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainer/comm/tcp_transport.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::comm::testing {

class InMemoryWireup : public Wireup {
public:
    struct Board {
        explicit Board(int ranks) : ranks(ranks) {}
        int ranks;
        std::mutex mutex;
        std::condition_variable changed;
        std::map<int, std::vector<std::string>> rounds;
        std::map<int, int> arrived;
    };

    InMemoryWireup(Board& board, int rank, std::string host) : board_(board) {
        identity_ = Identity{rank, board.ranks, rank, 0, std::move(host)};
        secret_ = JobSecret(parse_step_secret(std::string(64, '7')));  // one step: one secret
    }
    std::string name() const override { return "in memory"; }
    std::string reachable_address() const override { return "127.0.0.1"; }
    std::vector<std::string> all_gather(const std::string& mine) override {
        std::unique_lock lock(board_.mutex);
        int round = round_++;
        auto& slots = board_.rounds[round];
        slots.resize(std::size_t(board_.ranks));
        slots[std::size_t(identity_.rank)] = mine;
        ++board_.arrived[round];
        board_.changed.notify_all();
        board_.changed.wait(lock, [&] { return board_.arrived[round] == board_.ranks; });
        return slots;
    }

private:
    Board& board_;
    int round_ = 0;
};

using MakeTransport = std::function<std::unique_ptr<Transport>(Wireup&)>;

// Runs body(rank, transport) on one thread per host in `hosts` (rank r on hosts[r]); the first
// failure is rethrown once all have ended.
inline void with_transports(const std::vector<std::string>& hosts, const MakeTransport& make,
                            const std::function<void(int, Transport&)>& body) {
    int ranks = int(hosts.size());
    InMemoryWireup::Board board(ranks);
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> failures(hosts.size());
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            try {
                InMemoryWireup wireup(board, r, hosts[std::size_t(r)]);
                auto transport = make(wireup);
                body(r, *transport);
            } catch (...) {
                failures[std::size_t(r)] = std::current_exception();
            }
        });
    for (auto& t : threads) t.join();
    for (auto& f : failures)
        if (f) std::rethrow_exception(f);
}

// `ranks` ranks over TCP, each on a host of its own.
inline void with_ranks(int ranks, const std::function<void(int, Transport&)>& body, int streams = 2,
                       std::chrono::seconds timeout = std::chrono::seconds(20)) {
    std::vector<std::string> hosts;
    for (int r = 0; r < ranks; ++r) hosts.push_back("rank" + std::to_string(r));
    with_transports(
        hosts,
        [&](Wireup& wireup) {
            return std::make_unique<TcpTransport>(wireup, TcpOptions{streams, 1024, timeout, ""});
        },
        body);
}

}  // namespace trellis::comm::testing
