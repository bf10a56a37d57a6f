// SPDX-License-Identifier: Apache-2.0
// The shared memory transport between ranks running as threads of this process, on one node or
// several (their hosts are given; "nodes" here share the machine, and the transport tells them
// apart by host name, as it does on a cluster): exact sums for every allreduce schedule and
// placement, compressed or not, the hierarchical one over TCP alone too and refused where nodes
// are uneven; the broadcast through the hierarchy, once per node across the network; messages larger than a ring in posting order; whichever
// message comes first; the failure notice naming the rank that failed; and /dev/shm left clean.
#include "tests/catch.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/barrier.hpp"
#include "trainer/comm/broadcast.hpp"
#include "trainer/comm/ring_allreduce.hpp"
#include "trainer/comm/shared_memory_transport.hpp"
#include "tests/unit/ranks_in_threads.hpp"

using namespace trellis::comm;
using namespace trellis::comm::testing;

namespace {

// Small slots and rings, so that the tests' messages span many slots and fill the rings.
MakeTransport shared_memory(std::chrono::seconds timeout = std::chrono::seconds(20)) {
    return [timeout](Wireup& wireup) {
        return std::make_unique<SharedMemoryTransport>(wireup, TcpOptions{2, 1024, timeout, ""}, ShmLayout{0, 3, 4096});
    };
}

// Hosts for `nodes` nodes of `per_node` ranks each, ranks numbered node by node.
std::vector<std::string> placement(const std::vector<int>& ranks_per_node) {
    std::vector<std::string> hosts;
    int node = 0;
    for (int ranks : ranks_per_node) {
        for (int r = 0; r < ranks; ++r) hosts.push_back("node" + std::to_string(node));
        ++node;
    }
    return hosts;
}

std::set<std::string> trellis_segments() {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm"))
        if (entry.path().filename().string().starts_with("trellis-")) names.insert(entry.path().filename());
    return names;
}

}  // namespace

TEST_CASE("shared memory: the name says whether the job spans nodes") {
    std::vector<std::string> names(4);
    for (auto hosts : {placement({4}), placement({2, 2})}) {
        with_transports(hosts, shared_memory(),
                        [&](int rank, Transport& transport) { names[std::size_t(rank)] = transport.name(); });
        CHECK(names[0] == (hosts[3] == hosts[0] ? "shm" : "shm+tcp"));
    }
}

TEST_CASE("shared memory: every schedule sums exactly on every placement, compressed or not") {
    const std::vector<std::vector<int>> placements = {{4},       {2, 2},    {1, 1, 1, 1}, {3, 1},
                                                      {1, 2, 1}, {2, 2, 2}, {3, 3},       {2, 2, 2, 2}};
    for (const auto& layout : placements) {
        auto hosts = placement(layout);
        int ranks = int(hosts.size());
        bool uniform = layout.size() > 1 && layout[0] > 1 &&
                       std::count(layout.begin(), layout.end(), layout[0]) == int(layout.size());
        std::vector<AllreduceAlgorithm> algorithms = {AllreduceAlgorithm::ring, AllreduceAlgorithm::automatic};
        if ((ranks & (ranks - 1)) == 0) algorithms.push_back(AllreduceAlgorithm::halving_doubling);
        if (uniform) algorithms.push_back(AllreduceAlgorithm::hierarchical);
        for (auto algorithm : algorithms)
            for (auto format : {WireFormat::f32, WireFormat::bf16})
                for (std::size_t count : {std::size_t(0), std::size_t(3), std::size_t(100003)}) {
                    INFO(hosts.front() << ".." << hosts.back() << " (" << ranks << " ranks), "
                                       << allreduce_algorithms().name(algorithm) << ", " << wire_formats().name(format)
                                       << ", " << count << " values");
                    std::vector<std::vector<float>> results(hosts.size());
                    std::vector<AllreduceAlgorithm> chosen(hosts.size());
                    with_transports(hosts, shared_memory(), [&](int rank, Transport& transport) {
                        std::vector<float> data(count);
                        // Small integers: exact in bfloat16 too.
                        for (std::size_t i = 0; i < count; ++i) data[i] = float((rank + 1) * int(i % 5));
                        auto allreduce = make_allreduce(transport, algorithm, format, 16 << 10);
                        allreduce->sum(data);
                        results[std::size_t(rank)] = data;
                        chosen[std::size_t(rank)] = allreduce->algorithm();
                    });
                    float ranks_sum = float(ranks * (ranks + 1) / 2);
                    for (const auto& result : results)
                        for (std::size_t i = 0; i < count; ++i) REQUIRE(result[i] == ranks_sum * float(i % 5));
                    // auto: the hierarchy wherever it applies
                    if (algorithm == AllreduceAlgorithm::automatic && uniform)
                        CHECK(chosen[0] == AllreduceAlgorithm::hierarchical);
                    if (algorithm == AllreduceAlgorithm::automatic && !uniform)
                        CHECK(chosen[0] != AllreduceAlgorithm::hierarchical);
                }
    }
}

// Counts the bytes a rank sends to ranks on other hosts: what the network carries.
class CountingTransport : public Transport {
public:
    explicit CountingTransport(Transport& inner) : inner_(inner) {
        rank_ = inner.rank(), size_ = inner.size();
        for (int r = 0; r < size_; ++r) hosts_.push_back(inner.host_of(r));
    }
    std::string name() const override { return inner_.name(); }
    void exchange(std::span<const Transfer> transfers) override {
        for (const auto& t : transfers)
            if (t.kind == Transfer::Kind::send && host_of(t.peer) != host_of(rank_)) between_nodes += t.bytes;
        inner_.exchange(transfers);
    }
    std::size_t exchange_first(std::span<const Transfer> receives) override { return inner_.exchange_first(receives); }
    std::size_t between_nodes = 0;

private:
    Transport& inner_;
};

TEST_CASE("broadcast: every rank gets rank 0's data, sent across the network once per other node") {
    const std::vector<std::vector<std::string>> placements = {placement({4}),
                                                              placement({2, 2}),
                                                              placement({1, 1, 1}),
                                                              placement({3, 1}),
                                                              placement({1, 2, 1}),
                                                              {"node0", "node1", "node0", "node1"},
                                                              {"node0", "node1", "node1", "node2", "node0"}};
    for (const auto& hosts : placements) {
        std::set<std::string> nodes(hosts.begin(), hosts.end());
        INFO(hosts.size() << " ranks on " << nodes.size() << " nodes, rank 1 on " << hosts[1]);
        const std::size_t count = 70001;
        std::vector<std::vector<float>> results(hosts.size());
        std::vector<std::size_t> sent(hosts.size());
        with_transports(hosts, shared_memory(), [&](int rank, Transport& transport) {
            CountingTransport counting(transport);
            std::vector<float> data(count, float(rank + 1));
            data[count - 1] = float(rank * 7);
            broadcast_from_root(counting, data);
            results[std::size_t(rank)] = data;
            sent[std::size_t(rank)] = counting.between_nodes;
        });
        for (const auto& result : results) {
            REQUIRE(result[0] == 1.0f);
            REQUIRE(result[count / 2] == 1.0f);
            REQUIRE(result[count - 1] == 0.0f);
        }
        std::size_t total = 0;
        for (auto bytes : sent) total += bytes;
        CHECK(total == (nodes.size() - 1) * count * sizeof(float));
    }
}

TEST_CASE("hierarchical allreduce: over TCP alone too, and refused where nodes are uneven, naming them") {
    std::vector<std::vector<float>> results(4);
    with_transports(
        placement({2, 2}),
        [](Wireup& wireup) {
            return std::make_unique<TcpTransport>(wireup, TcpOptions{2, 1024, std::chrono::seconds(20), ""});
        },
        [&](int rank, Transport& transport) {
            std::vector<float> data(70001, float(rank + 1));
            make_allreduce(transport, AllreduceAlgorithm::hierarchical, WireFormat::f32, 16 << 10)->sum(data);
            results[std::size_t(rank)] = data;
        });
    for (const auto& result : results)
        for (float v : result) REQUIRE(v == 10.0f);
    std::vector<std::string> refusals(4);
    with_transports(placement({3, 1}), shared_memory(), [&](int rank, Transport& transport) {
        try {
            make_allreduce(transport, AllreduceAlgorithm::hierarchical);
        } catch (const trellis::UsageError& refusal) {
            refusals[std::size_t(rank)] = refusal.what();
        }
    });
    CHECK_THAT(refusals[0], Catch::Contains("this job has 3 on node0, 1 on node1"));
    CHECK(refusals[3] == refusals[0]);
}

TEST_CASE("shared memory: messages larger than a ring arrive whole and in posting order") {
    const std::vector<std::size_t> sizes = {50000, 0, 1, 123457, 4096};
    std::vector<std::vector<std::vector<char>>> received(2);
    with_transports(placement({2}), shared_memory(), [&](int rank, Transport& transport) {
        int peer = 1 - rank;
        std::vector<std::vector<char>> out, in;
        std::vector<Transfer> transfers;
        for (std::size_t m = 0; m < sizes.size(); ++m) {
            out.emplace_back(sizes[m], char('a' + m + 5 * rank));
            in.emplace_back(sizes[m]);
        }
        // Both directions at once, every message posted before any has moved.
        for (std::size_t m = 0; m < sizes.size(); ++m) {
            transfers.push_back(Transfer::send(peer, out[m].data(), sizes[m]));
            transfers.push_back(Transfer::recv(peer, in[m].data(), sizes[m]));
        }
        transport.exchange(transfers);
        received[std::size_t(rank)] = in;
    });
    for (int rank = 0; rank < 2; ++rank)
        for (std::size_t m = 0; m < sizes.size(); ++m) {
            const auto& message = received[std::size_t(rank)][m];
            REQUIRE(message == std::vector<char>(sizes[m], char('a' + m + 5 * (1 - rank))));
        }
}

TEST_CASE("shared memory: exchange_first takes whichever message comes first, on the node or not") {
    for (auto hosts : {placement({3}), placement({2, 1})}) {
        std::vector<std::size_t> order;
        with_transports(hosts, shared_memory(), [&](int rank, Transport& transport) {
            std::vector<char> message(20000, char(rank));
            if (rank == 0) {
                std::vector<char> from1(message.size()), from2(message.size());
                Transfer receives[] = {Transfer::recv(1, from1.data(), from1.size()),
                                       Transfer::recv(2, from2.data(), from2.size())};
                auto first = transport.exchange_first(receives);
                order.push_back(first);
                transport.exchange({&receives[1 - first], 1});
                order.push_back(std::size_t(from1[0] + from2[0]));  // both arrived: 1 + 2
                return;
            }
            // Rank 1 sends late: rank 2's message is first.
            if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
            auto send = Transfer::send(0, message.data(), message.size());
            transport.exchange({&send, 1});
        });
        INFO(hosts[0] << " " << hosts[1] << " " << hosts[2]);
        CHECK(order == std::vector<std::size_t>{1, 3});
    }
}

TEST_CASE("shared memory: a rank that fails is named to the others, who stop instead of hanging") {
    for (auto hosts : {placement({3}), placement({2, 1})}) {
        std::vector<std::string> messages(3);
        auto started = std::chrono::steady_clock::now();
        with_transports(hosts, shared_memory(), [&](int rank, Transport& transport) {
            std::vector<float> data(100000, 1.0f);
            if (rank == 1) return;  // leaves before the allreduce: its connections close
            try {
                RingAllreduce(transport).sum(data);
            } catch (const PeerFailure& failure) {
                messages[std::size_t(rank)] = failure.what();
            }
        });
        INFO(hosts[0] << " " << hosts[1] << " " << hosts[2]);
        CHECK_THAT(messages[0], Catch::Contains("rank 1"));
        CHECK_THAT(messages[2], Catch::Contains("rank 1"));
        CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
    }
}

TEST_CASE("shared memory: a rank busy for longer than the timeout still beats, and is waited for") {
    std::vector<float> sums(2);
    with_transports(placement({2}), shared_memory(std::chrono::seconds(1)), [&](int rank, Transport& transport) {
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
        std::vector<float> data(1000, 1.0f);
        RingAllreduce(transport).sum(data);
        sums[std::size_t(rank)] = data[999];
    });
    CHECK(sums == std::vector<float>{2.0f, 2.0f});
}

TEST_CASE("shared memory: nothing is left in /dev/shm, even by a rank that dies") {
    auto before = trellis_segments();
    std::set<std::string> while_running;
    with_transports(placement({3}), shared_memory(), [&](int rank, Transport& transport) {
        // Once every transport is made, the names are gone: a rank killed now leaves nothing.
        barrier(transport);
        if (rank == 0) while_running = trellis_segments();
    });
    CHECK(while_running == before);
    CHECK(trellis_segments() == before);
}
