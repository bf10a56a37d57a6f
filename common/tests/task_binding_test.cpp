// SPDX-License-Identifier: Apache-2.0
// The binding a task records of itself: which variables, which are left out, and the CPU list.
#include "tests/catch.hpp"

#include <sched.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "common/task_binding.hpp"

using namespace trellis;

TEST_CASE("the binding: trellis's variables and the libraries' it writes, not the meeting point nor the secret") {
    setenv("TRELLIS_DISTANCE", "PIX", 1);
    setenv("TRELLIS_CPUS", "0-3", 1);
    setenv("NCCL_IB_HCA", "=mlx5_0:1", 1);
    setenv("TRELLIS_MASTER", "198.18.0.1:29500", 1);
    setenv("TRELLIS_RENDEZVOUS_PORT", "29600", 1);
    setenv("TRELLIS_SECRET", std::string(64, 'a').c_str(), 1);
    setenv("TRELLIS_NOT_IN_THE_TABLE", "x", 1);
    setenv("MASTER_ADDR", "198.18.0.1", 1);
    unsetenv("UCX_NET_DEVICES");
    auto binding = task_binding();
    CHECK(binding.at("TRELLIS_DISTANCE") == "PIX");
    CHECK(binding.at("TRELLIS_CPUS") == "0-3");
    CHECK(binding.at("NCCL_IB_HCA") == "=mlx5_0:1");
    CHECK(binding.count("TRELLIS_MASTER") == 0);
    CHECK(binding.count("TRELLIS_RENDEZVOUS_PORT") == 0);
    CHECK(binding.count("TRELLIS_SECRET") == 0);
    CHECK(binding.count("TRELLIS_NOT_IN_THE_TABLE") == 0);
    CHECK(binding.count("MASTER_ADDR") == 0);
    CHECK(binding.count("UCX_NET_DEVICES") == 0);
    CHECK(binding.at("cpus") == affinity_list());
    for (const char* name : {"TRELLIS_DISTANCE", "TRELLIS_CPUS", "NCCL_IB_HCA", "TRELLIS_MASTER",
                             "TRELLIS_RENDEZVOUS_PORT", "TRELLIS_SECRET", "TRELLIS_NOT_IN_THE_TABLE", "MASTER_ADDR"})
        unsetenv(name);
}

TEST_CASE("the affinity list: ranges and single CPUs in Linux's syntax") {
    cpu_set_t saved;
    REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
    std::vector<int> allowed;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &saved)) allowed.push_back(cpu);
    REQUIRE(!allowed.empty());
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(allowed.back(), &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK(affinity_list() == std::to_string(allowed.back()));
    if (allowed.size() >= 2 && allowed[1] == allowed[0] + 1) {
        cpu_set_t two;
        CPU_ZERO(&two);
        CPU_SET(allowed[0], &two);
        CPU_SET(allowed[1], &two);
        REQUIRE(sched_setaffinity(0, sizeof two, &two) == 0);
        CHECK(affinity_list() == std::to_string(allowed[0]) + "-" + std::to_string(allowed[1]));
    }
    REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
}
