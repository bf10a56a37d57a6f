// SPDX-License-Identifier: Apache-2.0
// Loading an hwloc XML topology and planning one task per GPU, timed in process: the cost the
// plugin pays once per node per step. Prints the median over repeated runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "topology/discovery.hpp"
#include "topology/plan.hpp"

using namespace trellis::topology;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: plan_bench FILE.xml [RUNS]\n");
        return 2;
    }
    int runs = argc > 2 ? std::atoi(argv[2]) : 21;
    std::vector<double> ms;
    size_t tasks = 0;
    for (int i = 0; i < runs; ++i) {
        auto start = std::chrono::steady_clock::now();
        Node node = load_xml(argv[1]);
        PlanRequest request;
        request.tasks = std::max<int>(1, static_cast<int>(node.gpus.size()));
        Plan plan = make_plan(node, request);
        auto end = std::chrono::steady_clock::now();
        tasks = plan.tasks.size();
        ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("load+plan %s (%zu tasks): median %.2f ms, min %.2f ms, max %.2f ms over %d runs\n", argv[1], tasks,
                ms[ms.size() / 2], ms.front(), ms.back(), runs);
    return 0;
}
