// trellis-bench's command line, shared by its benchmarks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace trellis::bench {

struct BenchOptions {
    std::string benchmark;              // p2p | allreduce | ps
    int ps_servers = 1;
    std::string compress = "none";      // allreduce: values on the wire
    std::string algorithm = "auto";     // allreduce: auto | ring | halving-doubling
    std::vector<std::size_t> sizes;     // bytes
    int iterations = 20;
    int warmup = 3;
    std::string wireup = "auto";
    std::string transport = "tcp";
    int tcp_streams = 2;
    int timeout_seconds = 60;
    bool json = false;
};

// Throws UsageError naming the bad option; `help` is set for -h/--help.
BenchOptions parse_bench_options(const std::vector<std::string>& args, bool& help);
std::size_t parse_size(const std::string& text);  // 64, 16K, 4M, 1G (powers of two)
const char* bench_usage();

}  // namespace trellis::bench
