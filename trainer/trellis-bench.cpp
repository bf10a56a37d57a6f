// SPDX-License-Identifier: Apache-2.0
// trellis-bench: the network as trellis-train sees it (see trellis-bench(1)).
#include <cstdio>
#include <exception>

#include "common/error.hpp"
#include "trainer/bench/benchmarks.hpp"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/make_transport.hpp"

namespace {

int report_peer_failure(const trellis::comm::PeerFailure& error) {
    return trellis::report_error("trellis-bench: ", error, error.silent ? " (--comm-timeout)" : "");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace trellis;
    int rank = comm::rank_before_wireup();
    try {
        bool help = false;
        auto options = bench::parse_bench_options({argv + 1, argv + argc}, help);
        if (help) {
            std::fputs(bench::bench_usage().c_str(), stdout);
            return 0;
        }
        // The input pipeline runs in one process: no wireup, no transport.
        if (options.benchmark == bench::Benchmark::data) {
            bench::Results results(options, 0);
            return bench::run_data(options, results);
        }
        auto wireup = comm::make_wireup(options.wireup, std::chrono::seconds(options.timeout_seconds));
        rank = wireup->identity().rank;
        bench::Results results(options, rank);
        comm::TcpOptions tcp;
        tcp.streams = options.tcp_streams;
        tcp.timeout = std::chrono::seconds(options.timeout_seconds);
        auto transport =
            comm::make_transport(options.transport, *wireup, comm::with_binding(tcp), comm::verbs_options_from_binding);
        if (!transport) throw UsageError("a single process has nobody to talk to: start it on several ranks");
        auto run = [&] {
            switch (options.benchmark) {
            case bench::Benchmark::p2p: return bench::run_p2p(options, *transport, results);
            case bench::Benchmark::ps: return bench::run_ps(options, *transport, results);
            case bench::Benchmark::allreduce: break;
            case bench::Benchmark::data: break;  // ran above, without a transport
            }
            return bench::run_allreduce(options, *transport, results);
        };
        // A peer's failure is said while the transport still stands: taking down a node's
        // shared memory (every local rank's mailbox) takes a while on a node of many ranks.
        try {
            return run();
        } catch (const comm::PeerFailure& error) {
            return report_peer_failure(error);
        }
    } catch (const comm::PeerFailure& error) {
        return report_peer_failure(error);
    } catch (const UsageError& error) {
        // A bad command line, or one this number of ranks cannot run, is the same on every
        // rank: rank 0 says it once for the job, the others only exit with its status. What
        // one rank meets alone (its device, a peer, wrong sums) each rank says for itself.
        return rank == 0 ? report_error("trellis-bench: ", error) : error.exit_status();
    } catch (const std::exception& error) {
        return report_error("trellis-bench: ", error);
    }
}
