// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/bench/benchmarks.hpp"

namespace trellis::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Three significant digits, never in exponent form: an 8-byte message moves a few MB/s, which
// a fixed three decimals of GB/s would print as 0.000.
std::string three_digits(double value) {
    int decimals = value > 0 ? std::clamp(2 - int(std::floor(std::log10(value))), 0, 9) : 0;
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

}  // namespace

int run_p2p(const BenchOptions& options, comm::Transport& transport, Results& results) {
    if (transport.size() < 2) {
        std::fprintf(stderr, "trellis-bench: p2p needs at least 2 ranks, this job has %d\n", transport.size());
        return 2;
    }
    const int rank = transport.rank();
    results.begin(&transport, "");
    if (rank > 1) return 0;
    const int peer = 1 - rank;
    auto largest = *std::max_element(options.sizes.begin(), options.sizes.end());
    std::vector<char> buffer(largest, char(rank)), ack(1);
    if (rank == 0 && results.table())
        std::printf("# p2p over %s between rank 0 (%s) and rank 1 (%s)\n#%12s %14s %14s\n", transport.name().c_str(),
                    transport.host_of(0).c_str(), transport.host_of(1).c_str(), "bytes", "latency(us)",
                    "bandwidth(GB/s)");
    for (auto size : options.sizes) {
        auto ping = comm::Transfer::send(peer, buffer.data(), size),
             pong = comm::Transfer::recv(peer, buffer.data(), size);
        std::vector<double> round_trips;
        for (int i = 0; i < options.warmup + options.iterations; ++i) {
            auto start = Clock::now();
            if (rank == 0) {
                transport.exchange({&ping, 1});
                transport.exchange({&pong, 1});
            } else {
                transport.exchange({&pong, 1});
                transport.exchange({&ping, 1});
            }
            if (i >= options.warmup) round_trips.push_back(seconds_since(start));
        }
        std::sort(round_trips.begin(), round_trips.end());
        double latency = round_trips[round_trips.size() / 2] / 2;

        // Streaming: many messages one way, up to `window` of them posted at once (as
        // ib_write_bw keeps its send queue full, and a receiver announces several buffers),
        // one byte back at the end.
        constexpr int window = 8;
        std::vector<comm::Transfer> stream;
        auto start = Clock::now();
        for (int sent = 0; sent < options.iterations; sent += int(stream.size())) {
            stream.assign(std::size_t(std::min(window, options.iterations - sent)), rank == 0 ? ping : pong);
            transport.exchange(stream);
        }
        auto reply = rank == 0 ? comm::Transfer::recv(peer, ack.data(), 1) : comm::Transfer::send(peer, ack.data(), 1);
        transport.exchange({&reply, 1});
        double bandwidth = double(size) * options.iterations / seconds_since(start) / 1e9;
        if (rank != 0) continue;
        results.add({{"benchmark", "p2p"},
                     {"transport", transport.name()},
                     {"bytes", size},
                     {"latency_us", rounded(latency * 1e6, 2)},
                     {"bandwidth_gbs", std::stod(three_digits(bandwidth))}});
        if (results.table()) std::printf(" %12zu %14.2f %14s\n", size, latency * 1e6, three_digits(bandwidth).c_str());
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace trellis::bench
