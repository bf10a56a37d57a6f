#include "trainer/bench/bench_options.hpp"

#include <charconv>
#include <stdexcept>

#include "common/error.hpp"
#include "trainer/comm/allreduce.hpp"

namespace trellis::bench {

std::size_t parse_size(const std::string& text) {
    std::size_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    std::string unit(end, text.data() + text.size());
    std::size_t scale = unit.empty() || unit == "B" ? 1 : unit == "K" ? 1 << 10 : unit == "M" ? 1 << 20
                        : unit == "G" ? std::size_t(1) << 30 : 0;
    if (error != std::errc() || scale == 0 || value == 0)
        throw UsageError("invalid size '" + text + "' (expected a number with an optional K, M or G)");
    return value * scale;
}

namespace {

std::vector<std::size_t> size_list(const std::string& text) {
    std::vector<std::size_t> sizes;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto comma = text.find(',', start);
        sizes.push_back(parse_size(text.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return sizes;
}

int positive(const std::string& option, const std::string& value) {
    int parsed = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (error != std::errc() || end != value.data() + value.size() || parsed < 1)
        throw UsageError("invalid value '" + value + "' for " + option + " (expected a positive integer)");
    return parsed;
}

}  // namespace

BenchOptions parse_bench_options(const std::vector<std::string>& args, bool& help) {
    BenchOptions options;
    help = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& arg = args[i];
        if (arg == "-h" || arg == "--help") {
            help = true;
            return options;
        }
        if (arg == "--json") {
            options.json = true;
            continue;
        }
        if (arg.rfind("--", 0) != 0) {
            if (!options.benchmark.empty()) throw UsageError("unexpected argument '" + arg + "'");
            if (arg != "p2p" && arg != "allreduce" && arg != "ps")
                throw UsageError("unknown benchmark '" + arg + "' (accepted: p2p, allreduce, ps)");
            options.benchmark = arg;
            continue;
        }
        if (i + 1 >= args.size()) throw UsageError(arg + " needs a value");
        const auto& value = args[++i];
        if (arg == "--sizes") options.sizes = size_list(value);
        else if (arg == "--iters") options.iterations = positive(arg, value);
        else if (arg == "--warmup") options.warmup = positive(arg, value);
        else if (arg == "--wireup") options.wireup = value;
        else if (arg == "--transport") {
            if (value != "tcp" && value != "verbs" && value != "auto")
                throw UsageError("invalid value '" + value + "' for --transport (accepted: tcp, verbs, auto)");
            options.transport = value;
        } else if (arg == "--tcp-streams") options.tcp_streams = positive(arg, value);
        else if (arg == "--compress") {
            if (value != "none" && value != "bf16" && value != "fp16")
                throw UsageError("invalid value '" + value + "' for --compress (accepted: none, bf16, fp16)");
            options.compress = value;
        } else if (arg == "--algorithm") {
            comm::parse_allreduce_algorithm(value);  // throws naming the accepted ones
            options.algorithm = value;
        } else if (arg == "--ps-servers") options.ps_servers = positive(arg, value);
        else if (arg == "--comm-timeout") options.timeout_seconds = positive(arg, value);
        else throw UsageError("unknown option '" + arg + "' (see trellis-bench --help)");
    }
    if (options.benchmark.empty()) throw UsageError("name a benchmark: p2p, allreduce or ps");
    if (options.sizes.empty())
        options.sizes = options.benchmark == "p2p"
                            ? std::vector<std::size_t>{8, 1 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20}
                            : std::vector<std::size_t>{1 << 20, 16 << 20, 64 << 20};
    return options;
}

const char* bench_usage() {
    return R"(usage: trellis-bench p2p|allreduce|ps [options]

Measures the network with trellis-train's own transports, on every rank of the job (srun,
or processes with TRELLIS_RANK, TRELLIS_WORLD_SIZE and TRELLIS_MASTER=host:port).

  p2p          ranks 0 and 1: latency (half the round trip) and bandwidth by message size
  allreduce    allreduce of float32 sums over all ranks: time, algbw and
               busbw = algbw x 2(n-1)/n, as nccl-tests prints them; results are checked
  ps           parameter-server rounds: workers push a buffer split over the servers (the
               last --ps-servers ranks, default 1), servers sum and send back; push/pull
               rate per worker and aggregate bandwidth

  --sizes LIST        bytes, e.g. 8,64K,1M,16M (K, M, G are powers of two)
  --iters N           timed iterations per size (default 20)
  --warmup N          untimed iterations first (default 3)
  --wireup W          auto | pmix | slurm | env (default auto)
  --transport T       tcp | verbs | auto (default tcp; auto: verbs when an RDMA device
                      has an active port)
  --tcp-streams N     connections per peer for large messages (default 2)
  --ps-servers K      servers for the ps benchmark (default 1)
  --compress C        allreduce values on the wire: none | bf16 | fp16 (default none;
                      bandwidths count the float32 bytes)
  --algorithm A       allreduce schedule: auto | ring | halving-doubling (default auto:
                      halving-doubling when the number of ranks is a power of two)
  --comm-timeout S    seconds without progress before a peer counts as lost (default 60)
  --json              one JSON object per size instead of the table
  -h, --help
)";
}

}  // namespace trellis::bench
