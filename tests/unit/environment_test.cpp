#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "topology/discovery.hpp"
#include "topology/environment.hpp"

using namespace trellis::topology;
using Env = std::map<std::string, std::string>;

TEST_CASE("an NVIDIA task with an IPoIB HCA") {
    TaskBinding task;
    Gpu gpu;
    gpu.index = 5;
    gpu.vendor_index = 5;
    task.gpus = {gpu};
    task.hcas = {{"mlx5_5", 1, "0000:c4:00.0", Distance::pix, "ib5"}};
    task.cpus = CpuSet::parse("48-63");
    task.numa = {3};
    CHECK(render_environment(task) == Env{
                                          {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                                          {"CUDA_VISIBLE_DEVICES", "5"},
                                          {"NCCL_IB_HCA", "=mlx5_5:1"},
                                          {"NCCL_SOCKET_IFNAME", "ib5"},
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

TEST_CASE("several GPUs are listed in order; no netdev, no NCCL_SOCKET_IFNAME") {
    TaskBinding task;
    Gpu a, b;
    a.index = a.vendor_index = 2;
    b.index = b.vendor_index = 3;
    task.gpus = {a, b};
    task.hcas = {{"mlx5_1", 2, "0000:04:00.0", Distance::pxb, ""}};
    Env env = render_environment(task);
    CHECK(env.at("CUDA_VISIBLE_DEVICES") == "2,3");
    CHECK(env.at("TRELLIS_GPU") == "2,3");
    CHECK(env.at("NCCL_IB_HCA") == "=mlx5_1:2");
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
    CHECK(env.at("NCCL_SOCKET_IFNAME") == "ens1f0");
    CHECK(env.at("OMP_NUM_THREADS") == "4");
}

TEST_CASE("a CPU-only task without HCA gets only CPU variables") {
    TaskBinding task;
    task.cpus = CpuSet::parse("0-3");
    task.numa = {0};
    CHECK(render_environment(task) ==
          Env{{"OMP_NUM_THREADS", "4"}, {"TRELLIS_CPUS", "0-3"}, {"TRELLIS_NUMA", "0"}});
}
