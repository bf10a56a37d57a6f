// SPDX-License-Identifier: Apache-2.0
#include "trainer/bench/bench_options.hpp"

#include <algorithm>

namespace trellis::bench {

namespace {

const cli::Choices<bool>& pixel_kinds() {
    static const cli::Choices<bool> choices{{{"floats", false}, {"bytes", true}}};
    return choices;
}

}  // namespace

const cli::Choices<Benchmark>& benchmarks() {
    static const cli::Choices<Benchmark> choices{{{"p2p", Benchmark::p2p},
                                                  {"allreduce", Benchmark::allreduce},
                                                  {"ps", Benchmark::ps},
                                                  {"data", Benchmark::data}}};
    return choices;
}

namespace {

int positive(const std::string& what, const std::string& value) { return cli::parse_int(value, what, 1); }

cli::OptionTable option_table(BenchOptions& o) {
    auto algorithm = [&](auto& v) { o.algorithm = comm::allreduce_algorithms().parse(v, "--allreduce-algorithm"); };
    cli::OptionTable t("trellis-bench --help");
    t.value("--sizes", "LIST",
            "bytes, e.g. 8,64K,1M,16M (K, M, G are powers of two;\nallreduce and ps: multiples of 4, whole float32 "
            "values)",
            [&](auto& v) {
                o.sizes.clear();
                for (const auto& item : cli::split(v)) o.sizes.push_back(cli::parse_size(item, "--sizes"));
            })
        .value("--iters", "N", "timed iterations per size (default 20)",
               [&](auto& v) { o.iterations = positive("--iters", v); })
        .value("--warmup", "N", "untimed iterations first (default 3)",
               [&](auto& v) { o.warmup = positive("--warmup", v); })
        .value("--wireup", "W", "auto | pmix | slurm | env (default auto)",
               [&](auto& v) { o.wireup = comm::wireup_kinds().parse(v, "--wireup"); })
        .value("--transport", "T",
               "auto | tcp | verbs | shm (default auto: verbs when an RDMA\ndevice has an active port, else shm; shm: "
               "shared memory between\nthe ranks of a node, tcp to the others)",
               [&](auto& v) { o.transport = comm::transport_kinds().parse(v, "--transport"); })
        .value("--tcp-streams", "N", "connections per peer for large messages (default 2)",
               [&](auto& v) { o.tcp_streams = positive("--tcp-streams", v); })
        .value("--ps-servers", "K", "servers for the ps benchmark (default 1)",
               [&](auto& v) { o.ps_servers = positive("--ps-servers", v); })
        .value("--compress", "C",
               "allreduce values on the wire: none | bf16 | fp16 (default none;\nbandwidths count the float32 bytes)",
               [&](auto& v) { o.compress = comm::wire_formats().parse(v, "--compress"); })
        .value("--allreduce-algorithm", "A",
               "auto | ring | halving-doubling | hierarchical (default auto), as\n"
               "trellis-train's",
               algorithm)
        .value("--algorithm", "A", "the former spelling of --allreduce-algorithm", algorithm)
        .value("--comm-timeout", "S", "seconds without progress before a peer counts as lost (default 60)",
               [&](auto& v) { o.timeout_seconds = positive("--comm-timeout", v); })
        .value("--data", "D", "data: DIR | tfrecord:GLOB | idx:DIR, as trellis-train's --data",
               [&](auto& v) { o.data = v; })
        .value("--image-size", "S", "data: output images S x S (default 224)",
               [&](auto& v) { o.image_size = positive("--image-size", v); })
        .value("--pixels", "P",
               "data: floats | bytes, the batches trellis-train makes for the\nCPU and for a GPU (default floats)",
               [&](auto& v) { o.raw_pixels = pixel_kinds().parse(v, "--pixels"); })
        .value("--batch-size", "B", "data: images per batch (default 64)",
               [&](auto& v) { o.batch_size = positive("--batch-size", v); })
        .value("--threads", "LIST",
               "data: decode thread counts to measure, e.g. 1,2 (default 1\nand the CPUs this process may use)",
               [&](auto& v) {
                   o.threads.clear();
                   for (const auto& item : cli::split(v))
                       o.threads.push_back(cli::parse_int(item, "--threads", 1, 1024));
               })
        .flag("--json", "one JSON object per size (or thread count) instead of the table", [&] { o.json = true; })
        .value(
            "--log-dir", "DIR",
            "rank 0 appends a line describing the run, then the --json objects,\nto DIR/bench.jsonl (DIR is created)",
            [&](auto& v) { o.log_dir = v; });
    return t;
}

}  // namespace

BenchOptions parse_bench_options(const std::vector<std::string>& args, bool& help) {
    BenchOptions options;
    help = std::find_if(args.begin(), args.end(), [](auto& a) { return a == "-h" || a == "--help"; }) != args.end();
    if (help) return options;
    // The benchmark's name may come before, between or after the options.
    std::vector<std::string> rest = args;
    auto table = option_table(options);
    bool named = false;
    while (true) {
        rest = table.parse(rest, cli::OptionTable::Rest::command);
        if (rest.empty()) break;
        if (named) throw UsageError("unexpected argument '" + rest.front() + "'");
        options.benchmark = benchmarks().parse(rest.front(), "the benchmark");
        named = true;
        rest.erase(rest.begin());
    }
    if (!named) throw UsageError("name a benchmark: p2p, allreduce, ps or data");
    if (options.benchmark == Benchmark::data && options.data.empty())
        throw UsageError("the data benchmark needs --data DIR, tfrecord:GLOB or idx:DIR");
    // allreduce and ps move float32 values: a size that is no whole number of them would be
    // measured as the size below it, so it is refused with the two nearest that are.
    if (options.benchmark == Benchmark::allreduce || options.benchmark == Benchmark::ps)
        for (auto size : options.sizes)
            if (size % 4 != 0)
                throw UsageError("--sizes: " + std::to_string(size) + " bytes is no whole number of float32 values (" +
                                 benchmarks().name(options.benchmark) + " moves them, 4 bytes each): give " +
                                 (size < 4 ? std::string("4")
                                           : std::to_string(size / 4 * 4) + " or " + std::to_string(size / 4 * 4 + 4)));
    if (options.sizes.empty())
        options.sizes = options.benchmark == Benchmark::p2p
                            ? std::vector<std::size_t>{8, 1 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20}
                            : std::vector<std::size_t>{1 << 20, 16 << 20, 64 << 20};
    return options;
}

std::string bench_usage() {
    BenchOptions ignored;
    return R"(usage: trellis-bench p2p|allreduce|ps|data [options]

Measures the network with trellis-train's own transports, on every rank of the job (srun,
or processes with TRELLIS_RANK, TRELLIS_WORLD_SIZE and TRELLIS_MASTER=host:port).

  p2p                     ranks 0 and 1: latency (half the round trip) and bandwidth by
                          message size
  allreduce               allreduce of float32 sums over all ranks: time, algbw and
                          busbw = algbw x 2(n-1)/n, as nccl-tests prints them; results
                          are checked
  ps                      parameter-server rounds: workers push a buffer split over the
                          servers (the last --ps-servers ranks, default 1), servers sum
                          and send back; push/pull rate per worker and aggregate bandwidth
  data                    the input pipeline alone, in one process: decoded, augmented
                          training batches per second from --data, by decode thread count

)" + option_table(ignored).help() +
           "  -h, --help\n";
}

}  // namespace trellis::bench
