// trellis-bench: the network as trellis-train sees it (see trellis-bench(1)).
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "common/error.hpp"
#include "trainer/bench/benchmarks.hpp"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/make_transport.hpp"

int main(int argc, char** argv) {
    using namespace trellis;
    bench::BenchOptions options;
    try {
        bool help = false;
        options = bench::parse_bench_options({argv + 1, argv + argc}, help);
        if (help) {
            std::fputs(bench::bench_usage(), stdout);
            return 0;
        }
    } catch (const trellis::UsageError& error) {
        std::fprintf(stderr, "trellis-bench: %s\n", error.what());
        return 2;
    }
    try {
        auto wireup = comm::make_wireup(options.wireup, std::chrono::seconds(options.timeout_seconds));
        comm::TcpOptions tcp;
        tcp.streams = options.tcp_streams;
        tcp.timeout = std::chrono::seconds(options.timeout_seconds);
        auto transport = comm::make_transport(options.transport, *wireup, tcp);
        if (!transport) {
            std::fprintf(stderr, "trellis-bench: a single process has nobody to talk to: start it on several ranks\n");
            return 2;
        }
        if (options.benchmark == "p2p") return bench::run_p2p(options, *transport);
        if (options.benchmark == "ps") return bench::run_ps(options, *transport);
        return bench::run_allreduce(options, *transport);
    } catch (const trellis::UsageError& error) {
        std::fprintf(stderr, "trellis-bench: %s\n", error.what());
        return 2;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "trellis-bench: %s\n", error.what());
        return 1;
    }
}
