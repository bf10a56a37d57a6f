// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <functional>

#include "common/error.hpp"
#include "fixtures.hpp"
#include "topology/discovery.hpp"
#include "topology/plan.hpp"

using namespace trellis::topology;

namespace {

Plan plan_for(const std::string& fixture, int tasks, const std::function<void(PlanRequest&)>& adjust = {}) {
    Node node = load_xml(trellis::test::topology_fixture(fixture));
    PlanRequest request;
    request.tasks = tasks;
    if (adjust) adjust(request);
    return make_plan(node, request);
}

std::vector<int> gpu_indices(const TaskBinding& task) {
    std::vector<int> out;
    for (const auto& gpu : task.gpus) out.push_back(gpu.index);
    return out;
}

bool has_warning(const std::vector<std::string>& warnings, const std::string& text) {
    for (const auto& w : warnings)
        if (w.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("8 tasks on 8 GPUs behind two switch levels") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 8);
    REQUIRE(plan.tasks.size() == 8);
    const char* cpus[] = {"0-3", "4-7", "8-11", "12-15", "16-19", "20-23", "24-27", "28-31"};
    for (int i = 0; i < 8; ++i) {
        const auto& task = plan.tasks[i];
        INFO("task " << i);
        CHECK(task.local_rank == i);
        CHECK(gpu_indices(task) == std::vector<int>{i});
        REQUIRE(task.hcas.size() == 1);
        // Two HCAs are PIX to each GPU; the tie goes to the least used, so each gets its own.
        CHECK(task.hcas[0].name == "mlx5_" + std::to_string(i));
        CHECK(task.hcas[0].port == 1);
        CHECK(task.hcas[0].distance == Distance::pix);
        CHECK(task.hcas[0].netdev == "ib" + std::to_string(i));
        CHECK(task.cpus.to_string() == cpus[i]);
        CHECK(task.numa == std::vector<int>{i < 4 ? 0 : 1});
        CHECK(task.gdr);
        CHECK(task.warnings.empty());
    }
    CHECK(plan.host == "sw8");
    // The fixture is not this machine: the plan stands but CPUs are not bound.
    CHECK_FALSE(plan.bind_cpus);
    CHECK(has_warning(plan.warnings, "describes another machine"));
}

TEST_CASE("fewer tasks than GPUs: contiguous groups; HCA nearest the first GPU") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 4);
    CHECK(gpu_indices(plan.tasks[0]) == std::vector<int>{0, 1});
    CHECK(gpu_indices(plan.tasks[3]) == std::vector<int>{6, 7});
    CHECK(plan.tasks[1].hcas[0].name == "mlx5_2");
    CHECK(plan.tasks[0].cpus.to_string() == "0-7");
    CHECK(plan.tasks[1].cpus.to_string() == "8-15");
    CHECK(plan.tasks[2].cpus.to_string() == "16-23");

    // Groups stay within a socket (GPUs 0-3 on one, 4-7 on the other), even if sizes then
    // differ by more than one.
    Plan three = plan_for("two-level-switch-8gpu.xml", 3);
    CHECK(gpu_indices(three.tasks[0]) == std::vector<int>{0, 1});
    CHECK(gpu_indices(three.tasks[1]) == std::vector<int>{2, 3});
    CHECK(gpu_indices(three.tasks[2]) == std::vector<int>{4, 5, 6, 7});
    for (const auto& task : three.tasks) CHECK_FALSE(has_warning(task.warnings, "span"));
    // ... which the user is told even without a verbose report: GPUs sit idle.
    CHECK(has_warning(three.urgent_warnings, "tasks get 2 and 4 GPUs"));
    CHECK(has_warning(three.warnings, "tasks get 2 and 4 GPUs"));
    Plan slurm_split = plan_for("two-level-switch-8gpu.xml", 2, [](PlanRequest& r) { r.allowed_gpus = {0, 5, 6, 7}; });
    CHECK(gpu_indices(slurm_split.tasks[0]) == std::vector<int>{0});
    CHECK(has_warning(slurm_split.urgent_warnings, "tasks get 1 and 3 GPUs"));
    CHECK(plan.urgent_warnings.empty());  // 2 each
    CHECK(plan_for("two-level-switch-8gpu.xml", 2, [](PlanRequest& r) {
              r.allowed_gpus = {0, 1, 5};
          }).urgent_warnings.empty());  // 2 and 1: as even as 3 GPUs go

    // One task for all 8: it must span both sockets, and says so; distance and GPUDirect
    // describe its farthest GPU.
    Plan one =
        plan_for("two-level-switch-8gpu.xml", 1, [](PlanRequest& r) { r.hcas.only = {HcaRequest::parse("mlx5_0")}; });
    CHECK(has_warning(one.tasks[0].warnings, "GPUs span 2 sockets"));
    CHECK_FALSE(one.tasks[0].gdr);
    CHECK(one.tasks[0].env.at("TRELLIS_DISTANCE") == "SYS");
}

TEST_CASE("more tasks than GPUs: blocked onto GPUs, with a warning") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 16);
    CHECK(gpu_indices(plan.tasks[0]) == std::vector<int>{0});
    CHECK(gpu_indices(plan.tasks[1]) == std::vector<int>{0});
    CHECK(gpu_indices(plan.tasks[15]) == std::vector<int>{7});
    CHECK(plan.tasks[0].cpus.to_string() == "0-1");
    CHECK(plan.tasks[1].cpus.to_string() == "2-3");
    CHECK(plan.tasks[15].cpus.to_string() == "30-31");
    CHECK(has_warning(plan.warnings, "16 tasks for 8 GPUs"));
    // Tasks 0 and 1 share GPU 0, whose two PIX HCAs they now split.
    CHECK(plan.tasks[0].hcas[0].name == "mlx5_0");
    CHECK(plan.tasks[1].hcas[0].name == "mlx5_1");
}

TEST_CASE("SMT on binds both hardware threads of each core") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 8, [](PlanRequest& r) { r.smt = true; });
    CHECK(plan.tasks[0].cpus.to_string() == "0-3,32-35");
    CHECK(plan.tasks[7].cpus.to_string() == "28-31,60-63");
    CHECK(plan.tasks[7].env.at("OMP_NUM_THREADS") == "8");
}

TEST_CASE("allowed GPUs and CPUs limit the plan") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 2, [](PlanRequest& r) {
        r.allowed_gpus = std::vector<int>{4, 5, 6, 7};
        r.allowed_cpus = CpuSet::parse("16-31");
    });
    CHECK(gpu_indices(plan.tasks[0]) == std::vector<int>{4, 5});
    CHECK(gpu_indices(plan.tasks[1]) == std::vector<int>{6, 7});
    CHECK(plan.tasks[0].cpus.to_string() == "16-23");
    CHECK(plan.tasks[1].cpus.to_string() == "24-31");
    CHECK(plan.tasks[1].hcas[0].name == "mlx5_6");

    SECTION("no allowed CPU near the GPU: bound elsewhere with a warning") {
        Plan far = plan_for("two-level-switch-8gpu.xml", 1, [](PlanRequest& r) {
            r.allowed_gpus = std::vector<int>{7};
            r.allowed_cpus = CpuSet::parse("0-3");
        });
        CHECK(far.tasks[0].cpus.to_string() == "0-3");
        CHECK(has_warning(far.tasks[0].warnings, "no allowed CPU local to GPU 7"));
    }
}

TEST_CASE("two GPUs share one HCA") {
    Plan plan = plan_for("shared-hca-4gpu.xml", 4);
    const char* hcas[] = {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"};
    const char* cpus[] = {"0-1", "2-3", "4-5", "6-7"};
    for (int i = 0; i < 4; ++i) {
        CHECK(plan.tasks[i].hcas[0].name == hcas[i]);
        CHECK(plan.tasks[i].hcas[0].distance == Distance::pix);
        CHECK(plan.tasks[i].cpus.to_string() == cpus[i]);
    }
}

TEST_CASE("a DOWN port is passed over; the active port of a two-port HCA is chosen") {
    Plan plan = plan_for("down-port-2gpu.xml", 2);
    CHECK(plan.tasks[0].hcas[0].name == "mlx5_0");
    CHECK(plan.tasks[0].hcas[0].port == 2);
    CHECK(plan.tasks[0].hcas[0].netdev == "ib1");
    CHECK(plan.tasks[0].gdr);
    // GPU 1's own HCA is down: it falls back to mlx5_0 across the sockets.
    CHECK(plan.tasks[1].hcas[0].name == "mlx5_0");
    CHECK(plan.tasks[1].hcas[0].distance == Distance::sys);
    CHECK_FALSE(plan.tasks[1].gdr);
    CHECK(has_warning(plan.tasks[1].warnings, "GPUDirect RDMA not eligible: GPU 1 to mlx5_0 is SYS"));

    SECTION("require_active off takes the nearest HCA whatever its state") {
        Plan any = plan_for("down-port-2gpu.xml", 2, [](PlanRequest& r) { r.hcas.require_active = false; });
        CHECK(any.tasks[0].hcas[0].port == 1);
        CHECK(any.tasks[1].hcas[0].name == "mlx5_1");
    }
    SECTION("no ACTIVE HCA left after filtering: warning, no HCA variables") {
        Plan none = plan_for("down-port-2gpu.xml", 2, [](PlanRequest& r) { r.hcas.include = {"mlx5_1"}; });
        CHECK(none.tasks[0].hcas.empty());
        CHECK(none.tasks[0].env.count("NCCL_IB_HCA") == 0);
        CHECK(has_warning(none.warnings, "no usable ACTIVE HCA on downport (2 HCAs)"));
    }
    SECTION("exclude patterns") {
        Plan excluded = plan_for("down-port-2gpu.xml", 1, [](PlanRequest& r) { r.hcas.exclude = {"mlx5_*"}; });
        CHECK(excluded.tasks[0].hcas.empty());
    }
    SECTION("an explicit HCA list") {
        Plan chosen =
            plan_for("down-port-2gpu.xml", 2, [](PlanRequest& r) { r.hcas.only = {HcaRequest::parse("mlx5_0:2")}; });
        CHECK(chosen.tasks[1].hcas[0].name == "mlx5_0");
        CHECK_THROWS_WITH(
            plan_for("down-port-2gpu.xml", 1, [](PlanRequest& r) { r.hcas.only = {HcaRequest::parse("mlx5_9")}; }),
            Catch::Contains("HCA 'mlx5_9' is not on downport (it has: mlx5_0, mlx5_1)"));
        CHECK_THROWS_WITH(
            plan_for("down-port-2gpu.xml", 1, [](PlanRequest& r) { r.hcas.only = {HcaRequest::parse("mlx5_0:3")}; }),
            Catch::Contains("has no port 3"));
    }
}

TEST_CASE("a node without HCAs; SMT threads stay with their core") {
    Plan plan = plan_for("no-hca-2gpu.xml", 2);
    CHECK(plan.tasks[0].hcas.empty());
    CHECK(plan.tasks[0].cpus.to_string() == "0-1");
    CHECK(plan.tasks[1].cpus.to_string() == "2-3");
    CHECK(has_warning(plan.warnings, "no HCA on nohca"));
    // A step on this node alone sends nothing between nodes: no HCA is then no news.
    Plan alone = plan_for("no-hca-2gpu.xml", 2, [](PlanRequest& r) { r.single_node = true; });
    CHECK_FALSE(has_warning(alone.warnings, "no HCA on nohca"));
    Plan smt = plan_for("no-hca-2gpu.xml", 2, [](PlanRequest& r) { r.smt = true; });
    CHECK(smt.tasks[1].cpus.to_string() == "2-3,6-7");
}

TEST_CASE("more tasks than cores on a GPU: hardware threads are divided, then shared") {
    Plan threads = plan_for("no-hca-2gpu.xml", 6);
    // 3 tasks per GPU, both GPUs local to all 4 cores: regions are the same, so 6 tasks
    // share 4 cores; they get single hardware threads.
    std::set<int> seen;
    for (const auto& task : threads.tasks) {
        CHECK(task.cpus.size() >= 1);
        for (int cpu : task.cpus) CHECK(seen.insert(cpu).second);
    }
    Plan crowded = plan_for("no-hca-2gpu.xml", 10);
    CHECK(has_warning(crowded.tasks[9].warnings, "10 tasks share 8 CPUs"));
}

TEST_CASE("CPU-only node: tasks spread over NUMA nodes; HCA nearest their CPUs") {
    Plan plan = plan_for("cpu-only-4numa.xml", 4);
    for (int i = 0; i < 4; ++i) {
        CHECK(plan.tasks[i].gpus.empty());
        CHECK(plan.tasks[i].numa == std::vector<int>{i});
        CHECK(plan.tasks[i].cpus == CpuSet::parse(std::to_string(4 * i) + "-" + std::to_string(4 * i + 3)));
        CHECK(plan.tasks[i].hcas[0].name == "mlx5_0");
        CHECK_FALSE(plan.tasks[i].gdr);
    }
    CHECK(plan.tasks[2].hcas[0].distance == Distance::node);
    CHECK(plan.tasks[0].hcas[0].distance == Distance::sys);
    CHECK(plan.tasks[0].env.count("CUDA_VISIBLE_DEVICES") == 0);

    Plan two = plan_for("cpu-only-4numa.xml", 2);
    CHECK(two.tasks[0].cpus.to_string() == "0-7");
    CHECK(two.tasks[0].numa == std::vector<int>{0, 1});
    Plan eight = plan_for("cpu-only-4numa.xml", 8);
    CHECK(eight.tasks[1].cpus.to_string() == "2-3");
    CHECK(eight.tasks[1].numa == std::vector<int>{0});
    Plan wide = plan_for("cpu-only-4numa.xml", 1);
    CHECK(wide.tasks[0].cpus.to_string() == "0-15");
    CHECK(has_warning(wide.tasks[0].warnings, "CPUs span 2 sockets"));
}

TEST_CASE("a step without GPUs on a GPU node plans CPU-only tasks") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 2, [](PlanRequest& r) { r.allowed_gpus = std::vector<int>{}; });
    CHECK(plan.tasks[0].gpus.empty());
    CHECK(plan.tasks[0].cpus.to_string() == "0-15");
    CHECK(plan.tasks[1].cpus.to_string() == "16-31");
    CHECK(plan.tasks[1].hcas[0].distance == Distance::node);
}

TEST_CASE("policy none reports the plan but binds and exports nothing") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 8, [](PlanRequest& r) { r.policy = Policy::none; });
    CHECK(plan.policy == Policy::none);
    CHECK_FALSE(plan.bind_cpus);
    CHECK(plan.tasks[3].hcas[0].name == "mlx5_3");
    CHECK(plan.tasks[3].env.empty());
    CHECK(has_warning(plan.warnings, "policy none"));
}

TEST_CASE("requests that cannot be planned are refused with the value named") {
    CHECK_THROWS_WITH(plan_for("shared-hca-4gpu.xml", 0), Catch::Contains("at least 1, not 0"));
    CHECK_THROWS_WITH(plan_for("shared-hca-4gpu.xml", 1, [](PlanRequest& r) { r.allowed_gpus = std::vector<int>{4}; }),
                      Catch::Contains("GPU 4 is not on shared4 (it has 4 GPUs: 0-3)"));
    CHECK_THROWS_WITH(
        plan_for("shared-hca-4gpu.xml", 1, [](PlanRequest& r) { r.allowed_cpus = CpuSet::parse("100-101"); }),
        Catch::Contains("contain none of shared4's CPUs (0-7)"));
    CHECK_THROWS_WITH(parse_policy("nearest"), Catch::Contains("accepted: closest, none"));
    CHECK_THROWS_AS(HcaRequest::parse("mlx5_0:x"), trellis::UsageError);
    CHECK_THROWS_AS(HcaRequest::parse(":1"), trellis::UsageError);
    CHECK(HcaRequest::parse("mlx5_2:1").port == 1);
}

TEST_CASE("a task with k GPUs gets its k nearest HCAs, distinct") {
    Plan plan = plan_for("two-level-switch-8gpu.xml", 1);
    const auto& task = plan.tasks[0];
    REQUIRE(task.gpus.size() == 8);
    REQUIRE(task.hcas.size() == 8);
    for (int i = 0; i < 8; ++i) {
        CHECK(task.hcas[i].name == "mlx5_" + std::to_string(i));
        CHECK(task.hcas[i].distance == Distance::pix);
    }
    CHECK(task.env.at("UCX_NET_DEVICES").find("mlx5_7:1") != std::string::npos);

    SECTION("fewer HCAs than GPUs: each HCA once, then no more") {
        Plan shared = plan_for("shared-hca-4gpu.xml", 1);
        REQUIRE(shared.tasks[0].hcas.size() == 2);
        CHECK(shared.tasks[0].hcas[0].name == "mlx5_0");
        CHECK(shared.tasks[0].hcas[1].name == "mlx5_1");
    }
}

TEST_CASE("NCCL gets one HCA set for the whole node, only when the choice is restricted") {
    Plan open = plan_for("two-level-switch-8gpu.xml", 8);
    CHECK(open.node_hcas.size() == 8);
    CHECK_FALSE(open.hcas_restricted);
    for (const auto& task : open.tasks) CHECK(task.env.count("NCCL_IB_HCA") == 0);

    Plan narrowed = plan_for("two-level-switch-8gpu.xml", 8, [](PlanRequest& r) { r.hcas.include = {"mlx5_[0-3]"}; });
    for (const auto& task : narrowed.tasks) {
        INFO("task " << task.local_rank);
        CHECK(task.env.at("NCCL_IB_HCA") == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
        CHECK(task.env.at("NCCL_SOCKET_IFNAME") == "=ib0,ib1,ib2,ib3");
    }
    CHECK(narrowed.tasks[6].env.at("UCX_NET_DEVICES") == "mlx5_2:1");  // its own, nearest of those left
}

TEST_CASE("GPU numbers: the node's, or the step's under constrained devices; shared visibility") {
    auto step = [](PlanRequest& r) { r.allowed_gpus = std::vector<int>{2, 5, 6}; };
    Plan node_numbers = plan_for("two-level-switch-8gpu.xml", 3, step);
    CHECK(node_numbers.tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "5");
    CHECK(node_numbers.tasks[1].env.at("TRELLIS_GPU") == "5");

    Plan step_numbers = plan_for("two-level-switch-8gpu.xml", 3, [&](PlanRequest& r) {
        step(r);
        r.gpu_numbering = GpuNumbering::step;
    });
    const char* devices[] = {"0", "1", "2"};
    for (int i = 0; i < 3; ++i) CHECK(step_numbers.tasks[i].env.at("CUDA_VISIBLE_DEVICES") == devices[i]);
    CHECK(step_numbers.tasks[1].env.at("TRELLIS_GPU") == "5");

    Plan shared = plan_for("two-level-switch-8gpu.xml", 3, [&](PlanRequest& r) {
        step(r);
        r.gpu_numbering = GpuNumbering::step;
        r.share_gpus = true;
    });
    CHECK(shared.tasks[0].env.at("CUDA_VISIBLE_DEVICES") == "0,1,2");
    CHECK(shared.tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "1,0,2");
    CHECK(shared.tasks[2].env.at("CUDA_VISIBLE_DEVICES") == "2,0,1");
    CHECK(shared.tasks[2].env.at("TRELLIS_GPU") == "6");
}
