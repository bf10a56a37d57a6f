// SPDX-License-Identifier: Apache-2.0
// trellis-bench's command line, shared by its benchmarks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/make_transport.hpp"
#include "trainer/comm/wire_format.hpp"
#include "trainer/comm/wireup.hpp"

namespace trellis::bench {

enum class Benchmark { p2p, allreduce, ps, data };
// Their spellings: p2p, allreduce, ps, data.
const cli::Choices<Benchmark>& benchmarks();

struct BenchOptions {
    Benchmark benchmark = Benchmark::allreduce;
    int ps_servers = 1;
    comm::WireFormat compress = comm::WireFormat::f32;  // allreduce: values on the wire
    comm::AllreduceAlgorithm algorithm = comm::AllreduceAlgorithm::automatic;
    std::vector<std::size_t> sizes;  // bytes
    int iterations = 20;
    int warmup = 3;
    comm::WireupKind wireup = comm::WireupKind::automatic;
    comm::TransportKind transport = comm::TransportKind::automatic;
    int tcp_streams = 2;
    int timeout_seconds = 60;
    bool json = false;
    std::string log_dir;  // rank 0 appends the run and its results to DIR/bench.jsonl
    // data: the input pipeline alone
    std::string data;  // --data, as trellis-train's
    int image_size = 224;
    int batch_size = 64;
    std::vector<int> threads;  // decode threads to try (default 1 and the usable CPUs)
    bool raw_pixels = false;   // --pixels bytes: batches of bytes, as a GPU run takes them
};

// Throws UsageError naming the bad option; `help` is set for -h/--help.
BenchOptions parse_bench_options(const std::vector<std::string>& args, bool& help);
std::string bench_usage();

}  // namespace trellis::bench
