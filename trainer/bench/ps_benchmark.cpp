// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "trainer/bench/benchmarks.hpp"

namespace trellis::bench {

// Synchronous push/pull rounds as the parameter server runs them: every worker pushes its
// slice of a buffer of `size` bytes to each of the K servers (the last K ranks); each server
// sums the slices it received and sends the result back to every worker.
int run_ps(const BenchOptions& options, comm::Transport& transport, Results& results) {
    using Clock = std::chrono::steady_clock;
    const int n = transport.size(), rank = transport.rank(), servers = options.ps_servers;
    if (servers < 1 || servers >= n)
        throw UsageError("ps needs 1 to " + std::to_string(n - 1) + " servers for " + std::to_string(n) +
                         " ranks, got " + std::to_string(servers));
    const int workers = n - servers;
    const bool server = rank >= workers;
    results.begin(&transport, "");
    if (rank == 0 && results.table())
        std::printf("# ps push/pull over %s: %d %s, %d %s\n#%12s %12s %14s %16s\n", transport.name().c_str(), workers,
                    workers == 1 ? "worker" : "workers", servers, servers == 1 ? "server" : "servers", "bytes",
                    "time(us)", "pushes/s/worker", "aggregate(GB/s)");
    for (auto size : options.sizes) {
        std::size_t count = std::max<std::size_t>(size / sizeof(float), std::size_t(servers));
        auto slice_begin = [&](int s) { return count * std::size_t(s) / std::size_t(servers); };
        std::vector<float> buffer(count, 1.0f);
        std::vector<std::vector<float>> received;
        int me = rank - workers;
        if (server) received.assign(std::size_t(workers), std::vector<float>(slice_begin(me + 1) - slice_begin(me)));
        std::vector<double> times;
        for (int i = 0; i < options.warmup + options.iterations; ++i) {
            auto start = Clock::now();
            std::vector<comm::Transfer> transfers;
            if (server) {
                float* slice = buffer.data() + slice_begin(me);
                for (int w = 0; w < workers; ++w)
                    transfers.push_back(
                        comm::Transfer::recv(w, received[std::size_t(w)].data(), received[std::size_t(w)].size() * 4));
                transport.exchange(transfers);
                std::fill(slice, slice + received[0].size(), 0.0f);
                for (const auto& part : received)
                    for (std::size_t j = 0; j < part.size(); ++j) slice[j] += part[j];
                transfers.clear();
                for (int w = 0; w < workers; ++w)
                    transfers.push_back(comm::Transfer::send(w, slice, received[0].size() * 4));
                transport.exchange(transfers);
            } else {
                for (int s = 0; s < servers; ++s)
                    transfers.push_back(comm::Transfer::send(workers + s, buffer.data() + slice_begin(s),
                                                             (slice_begin(s + 1) - slice_begin(s)) * 4));
                transport.exchange(transfers);
                for (auto& t : transfers) t.kind = comm::Transfer::Kind::recv;
                transport.exchange(transfers);
            }
            if (i >= options.warmup) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        }
        // Freed before the next size: registrations made for them must not outlive them.
        transport.forget(buffer.data(), buffer.size() * sizeof(float));
        for (const auto& part : received) transport.forget(part.data(), part.size() * sizeof(float));
        std::sort(times.begin(), times.end());
        double median = times[times.size() / 2], bytes = double(count * 4);
        double aggregate = 2.0 * bytes * workers / median / 1e9;
        if (rank != 0) continue;
        results.add({{"benchmark", "ps"},
                     {"transport", transport.name()},
                     {"workers", workers},
                     {"servers", servers},
                     {"bytes", count * 4},
                     {"time_us", rounded(median * 1e6, 1)},
                     {"pushes_per_sec", rounded(1 / median, 1)},
                     {"aggregate_gbs", rounded(aggregate, 3)}});
        if (results.table()) std::printf(" %12.0f %12.1f %14.1f %16.3f\n", bytes, median * 1e6, 1 / median, aggregate);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace trellis::bench
