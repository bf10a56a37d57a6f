// SPDX-License-Identifier: Apache-2.0
// The benchmarks of trellis-bench. Each runs on every rank; rank 0 prints the table or hands
// its results to `results` (--json, --log-dir).
#pragma once

#include "trainer/bench/bench_options.hpp"
#include "trainer/bench/results.hpp"
#include "trainer/comm/transport.hpp"

namespace trellis::bench {

// Ping-pong between ranks 0 and 1 (other ranks wait): latency is half the median round trip
// of one message; bandwidth streams `iterations` messages one way and waits for a reply.
int run_p2p(const BenchOptions& options, comm::Transport& transport, Results& results);
// Ring allreduce of float32 sums; every rank checks the result. Non-zero on a wrong sum.
int run_allreduce(const BenchOptions& options, comm::Transport& transport, Results& results);
// Synchronous push/pull rounds between workers and the last --ps-servers ranks.
int run_ps(const BenchOptions& options, comm::Transport& transport, Results& results);
// The input pipeline (decode, augment, batch) of --data, for each --threads count: one
// process, no network.
int run_data(const BenchOptions& options, Results& results);

}  // namespace trellis::bench
