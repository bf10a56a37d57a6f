// SPDX-License-Identifier: Apache-2.0
// The machine the tests run on: discovery must work and give a valid plan. CI machines have
// no GPUs, so the plan there is CPU-only; on a GPU machine the GPU rules apply instead.
#include "tests/catch.hpp"

#include <set>

#include "topology/discovery.hpp"
#include "topology/plan.hpp"

using namespace trellis::topology;

TEST_CASE("live discovery gives a usable node") {
    Node node = discover_live();
    CHECK(node.this_machine);
    CHECK(node.source == "live");
    CHECK_FALSE(node.host.empty());
    CHECK_FALSE(node.cpus.empty());
    CHECK_FALSE(node.allowed_cpus.empty());
    CHECK(node.cpus.contains(node.allowed_cpus));
    CHECK_FALSE(node.cores.empty());
    CHECK_FALSE(node.numa_nodes.empty());
}

TEST_CASE("live plan: one task per allowed core, disjoint, bound") {
    Node node = discover_live();
    int cores = 0;
    for (const auto& core : node.cores)
        for (int pu : core.pus)
            if (node.allowed_cpus.contains(pu)) {
                ++cores;
                break;
            }
    PlanRequest request;
    request.tasks = cores;
    if (node.gpus.empty()) request.allowed_gpus = std::vector<int>{};
    Plan plan = make_plan(node, request);
    CHECK(plan.bind_cpus);
    std::set<int> used;
    for (const auto& task : plan.tasks) {
        CHECK(task.gpus.empty());
        CHECK(task.cpus.size() == 1);
        CHECK(node.allowed_cpus.contains(task.cpus));
        for (int cpu : task.cpus) CHECK(used.insert(cpu).second);
        CHECK(task.env.at("OMP_NUM_THREADS") == "1");
        CHECK_FALSE(task.numa.empty());
    }
}
