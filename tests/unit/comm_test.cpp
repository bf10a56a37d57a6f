// SPDX-License-Identifier: Apache-2.0
// The communication layer with real TCP connections between ranks running as threads of
// this process (they meet in memory, so no port is fixed): both allreduce schedules, bucketed
// gradient averaging, broadcast, the watch graph and the links a rank makes, the failure
// notice naming the rank that failed, and the TCP rendezvous itself.
#include "tests/catch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/step_secret.hpp"
#include "trainer/comm/barrier.hpp"
#include "trainer/comm/broadcast.hpp"
#include "trainer/comm/group_transport.hpp"
#include "trainer/comm/handshake.hpp"
#include "trainer/comm/halving_doubling_allreduce.hpp"
#include "trainer/comm/bucketed_allreduce.hpp"
#include "trainer/comm/rendezvous.hpp"
#include "trainer/comm/ring_allreduce.hpp"
#include "trainer/comm/tcp_transport.hpp"
#include "trainer/comm/watch_graph.hpp"
#include "tests/unit/ranks_in_threads.hpp"

using namespace trellis::comm;
using namespace trellis::comm::testing;

namespace {

// A port nobody listens on now, from the kernel, for the tests of the TCP rendezvous itself.
std::uint16_t unused_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    ::close(fd);
    return ntohs(address.sin_port);
}

JobSecret test_secret(char digit) { return JobSecret(trellis::parse_step_secret(std::string(64, digit))); }

}  // namespace

TEST_CASE("both allreduce schedules sum exactly for sizes around the rank count and across segments") {
    const std::pair<AllreduceAlgorithm, int> cases[] = {{AllreduceAlgorithm::ring, 2},
                                                        {AllreduceAlgorithm::ring, 3},
                                                        {AllreduceAlgorithm::ring, 4},
                                                        {AllreduceAlgorithm::halving_doubling, 2},
                                                        {AllreduceAlgorithm::halving_doubling, 4},
                                                        {AllreduceAlgorithm::halving_doubling, 8}};
    for (auto [algorithm, ranks] : cases) {
        // Sizes below the rank count leave some ranges empty; 300001 elements are many
        // uneven segments of 64 KiB.
        for (std::size_t count :
             {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(300001)}) {
            INFO(allreduce_algorithms().name(algorithm) << ", " << ranks << " ranks, " << count << " values");
            std::vector<std::vector<float>> results(static_cast<std::size_t>(ranks));
            with_ranks(ranks, [&](int rank, Transport& transport) {
                std::vector<float> data(count);
                for (std::size_t i = 0; i < count; ++i) data[i] = float((rank + 1) * int(i % 13));
                make_allreduce(transport, algorithm, WireFormat::f32, 64 << 10)->sum(data);
                results[std::size_t(rank)] = data;
            });
            float ranks_sum = float(ranks * (ranks + 1) / 2);
            for (const auto& result : results) {
                REQUIRE(result.size() == count);
                for (std::size_t i = 0; i < count; ++i) REQUIRE(result[i] == ranks_sum * float(i % 13));
            }
        }
    }
}

TEST_CASE("auto takes halving-doubling for a power-of-two number of ranks, ring otherwise") {
    for (int ranks : {1, 2, 3, 4, 6}) {
        std::vector<AllreduceAlgorithm> chosen(static_cast<std::size_t>(ranks));
        std::vector<std::string> refusals(static_cast<std::size_t>(ranks));
        with_ranks(ranks, [&](int rank, Transport& transport) {
            chosen[std::size_t(rank)] = make_allreduce(transport, AllreduceAlgorithm::automatic)->algorithm();
            try {
                make_allreduce(transport, AllreduceAlgorithm::halving_doubling);
            } catch (const trellis::UsageError& refusal) {
                refusals[std::size_t(rank)] = refusal.what();
            }
        });
        bool power_of_two = ranks == 1 || ranks == 2 || ranks == 4;
        INFO(ranks << " ranks");
        CHECK(chosen[0] == (power_of_two ? AllreduceAlgorithm::halving_doubling : AllreduceAlgorithm::ring));
        if (power_of_two)
            CHECK(refusals[0].empty());
        else
            CHECK_THAT(refusals[0], Catch::Contains("power-of-two number of ranks, not " + std::to_string(ranks)));
    }
    CHECK(allreduce_algorithms().parse("halving-doubling", "-") == AllreduceAlgorithm::halving_doubling);
    CHECK_THROWS_WITH(allreduce_algorithms().parse("tree", "--allreduce-algorithm"),
                      Catch::Contains("accepted: auto, ring, halving-doubling"));
}

TEST_CASE("bucketed allreduce averages gradients released during the backward pass") {
    const int ranks = 3;
    const std::size_t count = 100000;
    std::vector<std::vector<float>> results(ranks);
    std::vector<std::size_t> bytes(ranks);
    with_ranks(ranks, [&](int rank, Transport& transport) {
        std::vector<float> grads(count);
        BucketedAllreduce reducer(transport, grads, 64 << 10);
        for (int step = 0; step < 2; ++step) {
            for (std::size_t i = 0; i < count; ++i) grads[i] = float(rank * 3 + step);
            // Release the gradients from the end in uneven pieces, as layers finish.
            for (std::size_t offset : {std::size_t(90000), std::size_t(50000), std::size_t(49999), std::size_t(1000)})
                reducer.ready_from(offset);
            auto stats = reducer.finish();
            bytes[std::size_t(rank)] = stats.bytes;
        }
        results[std::size_t(rank)] = grads;
    });
    for (int r = 0; r < ranks; ++r) {
        CHECK(bytes[std::size_t(r)] == count * sizeof(float));
        for (float g : results[std::size_t(r)]) REQUIRE(g == Approx((0 + 3 + 6) / 3.0 + 1));
    }
}

TEST_CASE("broadcast gives every rank rank 0's values") {
    std::vector<std::vector<float>> results(3);
    with_ranks(3, [&](int rank, Transport& transport) {
        std::vector<float> data(5000, float(rank));
        broadcast_from_root(transport, data);
        results[std::size_t(rank)] = data;
    });
    for (const auto& r : results)
        for (float v : r) REQUIRE(v == 0.0f);
}

TEST_CASE("the watch graph: symmetric, joined, and about log2 n peers a rank") {
    for (int size : {1, 2, 3, 5, 16, 37, 64, 512, 1000}) {
        INFO(size << " ranks");
        std::vector<std::vector<int>> peers;
        std::size_t most = 0;
        for (int r = 0; r < size; ++r) {
            peers.push_back(watch_peers(r, size));
            most = std::max(most, peers.back().size());
        }
        int bits = 0;
        while ((1 << bits) < size) ++bits;
        CHECK(most <= std::size_t(bits + 1));
        for (int r = 0; r < size; ++r)
            for (int p : peers[std::size_t(r)]) {
                REQUIRE(p != r);
                REQUIRE(std::count(peers[std::size_t(p)].begin(), peers[std::size_t(p)].end(), r) == 1);
            }
        // Joined even without any one rank (a dead one): every other rank is reached from another.
        for (int dead : {0, size / 2}) {
            if (size < 3) continue;
            std::vector<bool> reached(static_cast<std::size_t>(size), false);
            std::vector<int> queue{dead == 0 ? 1 : 0};
            reached[std::size_t(queue[0])] = true;
            while (!queue.empty()) {
                int r = queue.back();
                queue.pop_back();
                for (int p : peers[std::size_t(r)])
                    if (p != dead && !reached[std::size_t(p)]) queue.push_back(p), reached[std::size_t(p)] = true;
            }
            CHECK(std::count(reached.begin(), reached.end(), true) == size - 1);
        }
    }
}

TEST_CASE("a rank links only to its watch peers and the peers its schedules use") {
    const int ranks = 16;
    std::vector<int> links(ranks), after_ring(ranks);
    with_ranks(ranks, [&](int rank, Transport& transport) {
        auto& tcp = dynamic_cast<TcpTransport&>(transport);
        std::vector<float> data(5000, 1.0f);
        // Halving-doubling, the binomial broadcast and the barrier use the watch peers alone.
        make_allreduce(transport, AllreduceAlgorithm::halving_doubling)->sum(data);
        broadcast_from_root(transport, data);
        barrier(transport);
        links[std::size_t(rank)] = tcp.links();
        barrier(transport);  // every rank has counted before any dials a new peer
        // A ring over every other rank links to its new neighbours when it first needs them.
        std::vector<int> evens;
        for (int r = 0; r < ranks; r += 2) evens.push_back(r);
        if (rank % 2 == 0) {
            GroupTransport group(transport, evens);
            RingAllreduce(group).sum(data);
        }
        after_ring[std::size_t(rank)] = tcp.links();
    });
    for (int r = 0; r < ranks; ++r) {
        INFO("rank " << r);
        CHECK(links[std::size_t(r)] == int(watch_peers(r, ranks).size()));
        // Of an even rank's ring neighbours r - 2 and r + 2, one is a bit away from it (the one
        // reached without a carry) and the other is not: one new link each, odd ranks none.
        auto watched = watch_peers(r, ranks);
        int added = 0;
        if (r % 2 == 0)
            for (int neighbour : {(r + 2) % ranks, (r + ranks - 2) % ranks})
                added += std::count(watched.begin(), watched.end(), neighbour) == 0;
        CHECK(added == (r % 2 == 0 ? 1 : 0));
        CHECK(after_ring[std::size_t(r)] == links[std::size_t(r)] + added);
    }
}

TEST_CASE("a rank that fails is named to the others, who stop instead of hanging") {
    std::vector<std::string> messages(3);
    with_ranks(3, [&](int rank, Transport& transport) {
        std::vector<float> data(1000, 1.0f);
        if (rank == 2) return;  // leaves before the allreduce: its connections close
        try {
            RingAllreduce(transport).sum(data);
        } catch (const PeerFailure& failure) {
            messages[std::size_t(rank)] = failure.what();
        }
    });
    CHECK_THAT(messages[0], Catch::Contains("rank 2"));
    CHECK_THAT(messages[1], Catch::Contains("rank 2"));
}

TEST_CASE("a rank busy for longer than the timeout still beats, and is waited for") {
    std::vector<float> sums(2);
    with_ranks(
        2,
        [&](int rank, Transport& transport) {
            // Rank 1 computes (or evaluates, or writes a checkpoint) for three timeouts.
            if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
            std::vector<float> data(1000, 1.0f);
            RingAllreduce(transport).sum(data);
            sums[std::size_t(rank)] = data[999];
        },
        2, std::chrono::seconds(1));
    CHECK(sums == std::vector<float>{2.0f, 2.0f});
}

TEST_CASE("a stray connection to the rendezvous port is ignored") {
    const std::uint16_t port = unused_port();
    std::thread stray([port] {
        // Connects before the ranks and says something that is not a join request.
        auto socket = connect_to("127.0.0.1", port, Clock::now() + std::chrono::seconds(10));
        const char junk[] = "GET / HTTP/1.0\r\n\r\n";
        socket.send_all(junk, sizeof junk, Clock::now() + std::chrono::seconds(1), "stray");
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    });
    std::vector<std::vector<std::string>> gathered(2);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
        ranks.emplace_back([&, r] {
            if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
            RendezvousWireup wireup("test", Identity{r, 2, r, 0, "h"}, test_secret('1'), "127.0.0.1", port,
                                    std::chrono::seconds(10));
            gathered[std::size_t(r)] = wireup.all_gather("rank" + std::to_string(r));
        });
    stray.join();
    for (auto& t : ranks) t.join();
    CHECK(gathered[0] == std::vector<std::string>{"rank0", "rank1"});
    CHECK(gathered[1] == gathered[0]);
}

TEST_CASE("a caller without the step's secret cannot take a rank's place in the rendezvous") {
    const std::uint16_t port = unused_port();
    // The impostor claims rank 1 with another secret before the real rank 1 calls; rank 0 drops
    // it and the real one gets through.
    std::vector<std::vector<std::string>> gathered(2);
    std::string impostor_error;
    std::thread impostor([&] {
        try {
            RendezvousWireup wireup("test", Identity{1, 2, 1, 0, "h"}, test_secret('2'), "127.0.0.1", port,
                                    std::chrono::seconds(2));
        } catch (const std::exception& error) {
            impostor_error = error.what();
        }
    });
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
        ranks.emplace_back([&, r] {
            if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(700));
            RendezvousWireup wireup("test", Identity{r, 2, r, 0, "h"}, test_secret('1'), "127.0.0.1", port,
                                    std::chrono::seconds(10));
            gathered[std::size_t(r)] = wireup.all_gather("rank" + std::to_string(r));
        });
    impostor.join();
    for (auto& t : ranks) t.join();
    CHECK(gathered[0] == std::vector<std::string>{"rank0", "rank1"});
    CHECK(gathered[1] == gathered[0]);
    CHECK_FALSE(impostor_error.empty());  // it was dropped each time it called, until its timeout
}

TEST_CASE("the handshake: a claim read in pieces is proven; a wrong secret or junk is not") {
    auto secret = test_secret('1'), other = test_secret('2');
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
    Socket caller(pair[0]), acceptor(pair[1]);
    auto deadline = Clock::now() + std::chrono::seconds(5);
    for (const auto* key : {&secret, &other}) {
        ClaimReader reader(secret);
        auto challenge = reader.challenge();
        acceptor.send_all(challenge.data(), challenge.size(), deadline, "test");
        std::string proven_by_caller;
        std::thread call([&] {
            try {
                prove_claim(caller, *key, Claim{Purpose::link, 3, 5, 1, 8, "where"}, deadline, "test");
                proven_by_caller = "yes";
            } catch (const NotProven& error) {
                proven_by_caller = error.what();
            }
        });
        // One byte at a time: the watcher must never need the claim whole in one read.
        while (reader.wanted() > 0) {
            std::uint8_t byte;
            acceptor.recv_all(&byte, 1, deadline, "test");
            REQUIRE(reader.take(&byte, 1));
        }
        if (key == &secret) {
            REQUIRE(reader.proven());
            CHECK(reader.claim().caller == 3);
            CHECK(reader.claim().callee == 5);
            CHECK(reader.claim().stream == 1);
            CHECK(reader.claim().payload == "where");
            auto proof = reader.proof();
            acceptor.send_all(proof.data(), proof.size(), deadline, "test");
            call.join();
            CHECK(proven_by_caller == "yes");
        } else {
            CHECK_FALSE(reader.proven());
            // An acceptor that answers with what it has not got is found out by the caller.
            Mac guess{};
            acceptor.send_all(guess.data(), guess.size(), deadline, "test");
            call.join();
            CHECK_THAT(proven_by_caller, Catch::Contains("does not hold this step's secret"));
        }
    }
    ClaimReader junk(secret);
    std::vector<std::uint8_t> http(junk.wanted(), 'G');
    CHECK_FALSE(junk.take(http.data(), http.size()));
}

TEST_CASE("a rendezvous with nobody listening times out with a clear message") {
    Identity identity{1, 2, 1, 0, "lonely"};
    auto port = std::to_string(unused_port());
    CHECK_THROWS_WITH(RendezvousWireup("test", identity, test_secret('1'), "127.0.0.1", std::uint16_t(std::stoi(port)),
                                       std::chrono::seconds(1)),
                      Catch::Contains("cannot connect to 127.0.0.1:" + port));
}

TEST_CASE("the binding's interface gives the address to advertise") {
    CHECK(interface_ipv4("lo") == "127.0.0.1");
    CHECK(interface_ipv4("no-such-interface0").empty());
    // Not loopback, whatever this machine has (possibly nothing but loopback).
    CHECK_FALSE(external_ipv4().starts_with("127."));
}

TEST_CASE("compressed allreduce: bfloat16 and float16 on the wire, float32 sums, equal results") {
    const std::pair<AllreduceAlgorithm, int> cases[] = {{AllreduceAlgorithm::ring, 3},
                                                        {AllreduceAlgorithm::halving_doubling, 4}};
    for (auto format : {WireFormat::bf16, WireFormat::f16})
        for (auto [algorithm, ranks] : cases) {
            INFO(allreduce_algorithms().name(algorithm) << ", " << ranks << " ranks");
            std::vector<std::vector<float>> results(static_cast<std::size_t>(ranks));
            with_ranks(ranks, [&](int rank, Transport& transport) {
                std::vector<float> data(100003);
                for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.001f * float(i % 1000) * float(rank + 1);
                make_allreduce(transport, algorithm, format, 64 << 10)->sum(data);
                results[std::size_t(rank)] = data;
            });
            double tolerance = format == WireFormat::bf16 ? 1.0 / 128 : 1.0 / 1024;  // relative, a few roundings
            for (std::size_t i = 0; i < results[0].size(); ++i) {
                float exact = 0.001f * float(i % 1000) * float(ranks * (ranks + 1) / 2);
                REQUIRE(results[0][i] == Approx(exact).epsilon(tolerance).margin(1e-6));
                for (const auto& other : results) REQUIRE(other[i] == results[0][i]);  // every rank ends equal
            }
        }
    std::vector<float> one{1.0f + 1.0f / 256};
    std::byte wire[2];
    encode(WireFormat::bf16, one, wire);
    decode(WireFormat::bf16, wire, one);
    CHECK(one[0] == 1.0f);  // 1 + 2^-8 rounds to even: 1
    CHECK_THROWS_WITH(wire_formats().parse("int8", "--compress"), Catch::Contains("accepted: none, bf16, fp16"));
}
