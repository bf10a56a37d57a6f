// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "trainer/bench/benchmarks.hpp"
#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/barrier.hpp"

namespace trellis::bench {

int run_allreduce(const BenchOptions& options, comm::Transport& transport, Results& results) {
    using Clock = std::chrono::steady_clock;
    const int n = transport.size(), rank = transport.rank();
    auto allreduce = comm::make_allreduce(transport, options.algorithm, options.compress);
    const auto algorithm = comm::allreduce_algorithms().name(allreduce->algorithm());
    results.begin(&transport, algorithm);
    if (rank == 0 && results.table())
        // The header and units rows as nccl-tests prints them, so that their readers find theirs.
        std::printf(
            "# allreduce (%s, float32 sum, %s on the wire) over %s, %d ranks\n"
            "#%12s %12s %6s %6s %10s %10s %10s %8s\n#%12s %12s %6s %6s %10s %10s %10s %8s\n",
            algorithm.c_str(),
            options.compress == comm::WireFormat::f32 ? "float32" : comm::wire_formats().name(options.compress).c_str(),
            transport.name().c_str(), n, "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "(B)",
            "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
    int failures = 0;
    double busbw_sum = 0;
    for (auto size : options.sizes) {
        std::size_t count = std::max<std::size_t>(size / sizeof(float), 1);
        // Rank r contributes (r + 1) * (i % 7 + 1): small integers, so the float sum is exact.
        std::vector<float> pattern(count), data(count);
        for (std::size_t i = 0; i < count; ++i) pattern[i] = float(i % 7 + 1);
        auto fill = [&] {
            for (std::size_t i = 0; i < count; ++i) data[i] = pattern[i] * float(rank + 1);
        };
        std::vector<double> times;
        for (int i = 0; i < options.warmup + options.iterations; ++i) {
            fill();
            comm::barrier(transport);  // as the peers do: the clock starts with every rank present
            auto start = Clock::now();
            allreduce->sum(data);
            if (i >= options.warmup) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        }
        long wrong = 0;
        const float ranks_sum = float(n * (n + 1) / 2);
        for (std::size_t i = 0; i < count; ++i) wrong += data[i] != ranks_sum * pattern[i];
        transport.forget(data.data(), data.size() * sizeof(float));  // freed before the next size
        failures += wrong > 0;
        std::sort(times.begin(), times.end());
        double median = times[times.size() / 2];
        double bytes = double(count * sizeof(float));
        double algbw = bytes / median / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
        if (rank != 0) continue;
        results.add({{"benchmark", "allreduce"},
                     {"algorithm", algorithm},
                     {"transport", transport.name()},
                     {"ranks", n},
                     {"bytes", count * sizeof(float)},
                     {"time_us", rounded(median * 1e6, 1)},
                     {"algbw_gbs", rounded(algbw, 3)},
                     {"busbw_gbs", rounded(busbw, 3)},
                     {"wrong", wrong}});
        if (results.table())
            std::printf(" %12.0f %12zu %6s %6s %10.1f %10.3f %10.3f %8ld\n", bytes, count, "float", "sum", median * 1e6,
                        algbw, busbw, wrong);
        busbw_sum += busbw;
        std::fflush(stdout);
    }
    if (rank == 0 && results.table() && !options.sizes.empty())
        std::printf("# Avg bus bandwidth    : %g\n", busbw_sum / double(options.sizes.size()));
    if (failures)
        std::fprintf(stderr, "trellis-bench: rank %d: allreduce results wrong at %d size(s)\n", rank, failures);
    return failures ? 1 : 0;
}

}  // namespace trellis::bench
