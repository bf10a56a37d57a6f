// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include "fixtures.hpp"
#include "topology/discovery.hpp"
#include "topology/environment.hpp"

using namespace trellis::topology;
using Env = std::map<std::string, std::string>;

namespace {

Gpu gpu_at(int index) {
    Gpu gpu;
    gpu.index = gpu.vendor_index = index;
    return gpu;
}

}  // namespace

TEST_CASE("an NVIDIA task with an IPoIB HCA; NCCL is left to choose among all HCAs") {
    TaskBinding task;
    task.gpus = {gpu_at(5)};
    task.visible = {{gpu_at(5), 5}};
    task.hcas = {{"mlx5_5", 1, "0000:c4:00.0", Distance::pix, "ib5"}};
    task.distance = Distance::pix;
    task.cpus = CpuSet::parse("48-63");
    task.numa = {3};
    Plan plan;
    plan.node_hcas = {task.hcas.front()};
    CHECK(render_environment(task, plan) == Env{
                                                {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                                                {"CUDA_VISIBLE_DEVICES", "5"},
                                                {"OMPI_MCA_btl_openib_if_include", "mlx5_5:1"},
                                                {"OMP_NUM_THREADS", "16"},
                                                {"TRELLIS_CPUS", "48-63"},
                                                {"TRELLIS_DISTANCE", "PIX"},
                                                {"TRELLIS_GPU", "5"},
                                                {"TRELLIS_HCA", "mlx5_5:1"},
                                                {"TRELLIS_NUMA", "3"},
                                                {"UCX_NET_DEVICES", "mlx5_5:1"},
                                            });
}

TEST_CASE("a restricted HCA set is NCCL's on every task, whatever the task's own HCAs") {
    Plan plan;
    plan.hcas_restricted = true;
    plan.node_hcas = {{"mlx5_0", 1, "0000:04:00.0", Distance::sys, "ib0"},
                      {"mlx5_1", 1, "0000:05:00.0", Distance::sys, "ib1"}};
    TaskBinding a, b;
    a.hcas = {plan.node_hcas[0]};
    b.hcas = {plan.node_hcas[1]};
    Env ea = render_environment(a, plan), eb = render_environment(b, plan);
    CHECK(ea.at("NCCL_IB_HCA") == "=mlx5_0:1,mlx5_1:1");
    CHECK(ea.at("NCCL_SOCKET_IFNAME") == "=ib0,ib1");
    CHECK(ea.at("NCCL_IB_HCA") == eb.at("NCCL_IB_HCA"));
    CHECK(ea.at("UCX_NET_DEVICES") == "mlx5_0:1");
    CHECK(eb.at("UCX_NET_DEVICES") == "mlx5_1:1");
}

TEST_CASE("several GPUs and HCAs are listed in order; the task's distance is reported") {
    TaskBinding task;
    task.gpus = {gpu_at(2), gpu_at(3)};
    task.visible = {{gpu_at(2), 0}, {gpu_at(3), 1}};
    task.hcas = {{"mlx5_1", 2, "0000:04:00.0", Distance::pix, ""}, {"mlx5_2", 1, "0000:05:00.0", Distance::phb, ""}};
    task.distance = Distance::phb;  // the planner's: the farthest GPU from its nearest HCA
    Env env = render_environment(task, Plan{});
    CHECK(env.at("CUDA_VISIBLE_DEVICES") == "0,1");  // the numbers the task is given
    CHECK(env.at("TRELLIS_GPU") == "2,3");           // the node's numbers
    CHECK(env.at("UCX_NET_DEVICES") == "mlx5_1:2,mlx5_2:1");
    CHECK(env.at("TRELLIS_DISTANCE") == "PHB");
    CHECK(env.count("NCCL_IB_HCA") == 0);
    CHECK(env.count("NCCL_SOCKET_IFNAME") == 0);
    CHECK(env.count("OMP_NUM_THREADS") == 0);
}

TEST_CASE("AMD GPUs use ROCR_VISIBLE_DEVICES with their own numbering") {
    Node node = load_xml(trellis::test::topology_fixture("amd-2gpu.xml"));
    PlanRequest request;
    request.tasks = 2;
    Plan plan = make_plan(node, request);
    const Env& env = plan.tasks[1].env;
    CHECK(env.at("ROCR_VISIBLE_DEVICES") == "1");
    CHECK(env.count("CUDA_VISIBLE_DEVICES") == 0);
    CHECK(env.count("NCCL_SOCKET_IFNAME") == 0);
    CHECK(env.at("UCX_NET_DEVICES").size() > 0);
    CHECK(env.at("OMP_NUM_THREADS") == "4");
    request.hcas.include = {"*"};
    CHECK(make_plan(node, request).tasks[1].env.at("NCCL_SOCKET_IFNAME") == "=ens1f0");
}

TEST_CASE("a CPU-only task without HCA gets only CPU variables") {
    TaskBinding task;
    task.cpus = CpuSet::parse("0-3");
    task.numa = {0};
    CHECK(render_environment(task, Plan{}) ==
          Env{{"OMP_NUM_THREADS", "4"}, {"TRELLIS_CPUS", "0-3"}, {"TRELLIS_NUMA", "0"}});
}
