// SPDX-License-Identifier: Apache-2.0
#include "trainer/bench/results.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/host.hpp"
#include "common/log_file.hpp"
#include "common/task_binding.hpp"
#include "trainer/comm/group_transport.hpp"

namespace trellis::bench {

Results::Results(const BenchOptions& options, int rank) : options_(options), rank0_(rank == 0) {
    if (rank0_ && !options.log_dir.empty()) log_ = open_log_file(options.log_dir, "bench.jsonl");
}

void Results::begin(const comm::Transport* transport, const std::string& algorithm) {
    if (!rank0_ || !log_.is_open()) return;
    std::size_t nodes = 1, ranks_per_node = 1;
    if (transport) {
        comm::NodeGroups groups(*transport);
        nodes = groups.nodes.size();
        for (const auto& node : groups.nodes) ranks_per_node = std::max(ranks_per_node, node.size());
    }
    bool data = options_.benchmark == Benchmark::data;
    nlohmann::ordered_json run{
        {"kind", "run"},
        {"benchmark", benchmarks().name(options_.benchmark)},
        {"ranks", transport ? transport->size() : 1},
        {"nodes", nodes},
        {"ranks_per_node", ranks_per_node},
        {"transport", transport ? transport->name() : ""},
        {"algorithm", algorithm},
        {"sizes", data ? std::vector<std::size_t>{} : options_.sizes},
        {"iters", options_.iterations},
        {"warmup", options_.warmup},
        {"compress", comm::wire_formats().name(options_.compress)},
        {"ps_servers", options_.benchmark == Benchmark::ps ? options_.ps_servers : 0},
        {"hostname", transport ? transport->host_of(0) : node_name()},
        {"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
        {"binding", task_binding()}};
    log_ << run.dump() << '\n' << std::flush;
}

void Results::add(const nlohmann::ordered_json& result) {
    if (!rank0_) return;
    if (options_.json) {
        std::printf("%s\n", result.dump().c_str());
        std::fflush(stdout);
    }
    if (!log_.is_open()) return;
    nlohmann::ordered_json line{{"kind", "result"}};
    for (const auto& [key, value] : result.items()) line[key] = value;
    // Flushed per line: a benchmark killed half-way keeps the sizes it finished.
    log_ << line.dump() << '\n' << std::flush;
}

double rounded(double value, int decimals) {
    // Through printf's rounding, so that the number has the digits the table shows.
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return std::strtod(text, nullptr);
}

}  // namespace trellis::bench
