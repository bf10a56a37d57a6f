// SPDX-License-Identifier: Apache-2.0
// The planner's promises checked on real GPU servers' topologies (../shared/fixtures/topology):
// with one task per GPU, each task's HCA is one of the nearest ACTIVE ones, its CPUs are local
// to its GPU, and tasks on different GPUs share no core. Skipped (exit 77) without the folder.
#define CATCH_CONFIG_RUNNER
#include "tests/catch.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include "fixtures.hpp"
#include "topology/discovery.hpp"
#include "topology/plan.hpp"
#include "topology/report.hpp"

using namespace trellis::topology;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> shared_files() {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(trellis::test::shared_topology_dir()))
        if (entry.path().extension() == ".xml") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

const TaskBinding& task_on_gpu(const Plan& plan, const std::string& pci) {
    for (const auto& task : plan.tasks)
        if (!task.gpus.empty() && task.gpus.front().place.address.to_string() == pci) return task;
    throw std::runtime_error("no task on GPU " + pci);
}

}  // namespace

TEST_CASE("NVLink as nvidia-smi topo -m counts it: a DGX-2's GPUs reach each other over 6 links through NVSwitches") {
    std::string file = trellis::test::shared_topology_dir() + "/hwloc-nvidiaDGX2.xml";
    if (!fs::exists(file)) return;
    Node node = load_xml(file);
    REQUIRE(node.gpus.size() == 16);
    REQUIRE(node.nvlinks.size() == 16);
    for (size_t a = 0; a < 16; ++a)
        for (size_t b = 0; b < 16; ++b) CHECK(node.nvlinks[a][b] == (a == b ? 0 : 6));
    std::string table = format_node(node);
    CHECK(table.find("GPU0   X     NV6   NV6") != std::string::npos);
    CHECK(table.find("NV# = # NVLinks") != std::string::npos);
}

TEST_CASE("one task per GPU on every shared real-machine topology") {
    for (const auto& file : shared_files()) {
        INFO(file);
        Node node = load_xml(file);
        if (node.gpus.empty()) continue;
        PlanRequest request;
        request.tasks = static_cast<int>(node.gpus.size());
        Plan plan = make_plan(node, request);

        std::map<int, int> core_of;  // PU -> core position
        for (size_t c = 0; c < node.cores.size(); ++c)
            for (int pu : node.cores[c].pus) core_of[pu] = static_cast<int>(c);
        std::map<int, int> core_owner;  // core -> task

        for (const auto& task : plan.tasks) {
            INFO("task " << task.local_rank);
            REQUIRE(task.gpus.size() == 1);
            const Gpu& gpu = task.gpus.front();
            CHECK(gpu.index == task.local_rank);

            Distance nearest = Distance::sys;
            bool any_active = false;
            for (const auto& hca : node.hcas)
                if (hca.first_active_port()) {
                    any_active = true;
                    nearest = std::min(nearest, distance(gpu.place, hca.place));
                }
            if (any_active) {
                REQUIRE(task.hcas.size() == 1);
                CHECK(task.hcas.front().distance == nearest);
                CHECK(distance(gpu.place, std::find_if(node.hcas.begin(), node.hcas.end(), [&](const Hca& h) {
                                              return h.name == task.hcas.front().name;
                                          })->place) == nearest);
            } else {
                CHECK(task.hcas.empty());
            }

            CHECK_FALSE(task.cpus.empty());
            if (gpu.place.local_cpus.intersects(node.allowed_cpus)) CHECK(gpu.place.local_cpus.contains(task.cpus));
            // Sharing is allowed only where it cannot be avoided (more tasks than hardware
            // threads, as on the trimmed DGX-2 file), and then the plan must say so.
            bool told_to_share = std::any_of(task.warnings.begin(), task.warnings.end(),
                                             [](const std::string& w) { return w.find("share") != std::string::npos; });
            CHECK(told_to_share == (request.tasks > node.cpus.size()));
            for (int pu : task.cpus) {
                auto [it, fresh] = core_owner.emplace(core_of.at(pu), task.local_rank);
                if (!told_to_share) CHECK((fresh || it->second == task.local_rank));
            }
        }
    }
}

TEST_CASE("known answers from the fixtures' README") {
    std::string dir = trellis::test::shared_topology_dir();
    SECTION("JURECA-DC: each A100 gets the ConnectX-6 on its own PCIe switch") {
        Node node = load_xml(dir + "/psmgmt-jrc0323.xml");
        PlanRequest request;
        request.tasks = 4;
        Plan plan = make_plan(node, request);
        std::map<std::string, std::string> hca_of = {{"0000:03:00.0", "0000:04:00.0"},
                                                     {"0000:44:00.0", "0000:43:00.0"},
                                                     {"0000:84:00.0", "0000:83:00.0"},
                                                     {"0000:c4:00.0", "0000:c3:00.0"}};
        for (const auto& [gpu, hca] : hca_of) {
            const auto& task = task_on_gpu(plan, gpu);
            CHECK(task.hcas.at(0).pci == hca);
            CHECK(task.hcas.at(0).distance == Distance::pix);
            CHECK(task.gdr);
        }
    }
    SECTION("LLNL pascal: both P100s share the one HCA behind their switch") {
        Node node = load_xml(dir + "/mpibind-cts1-pascal.xml");
        PlanRequest request;
        request.tasks = 2;
        Plan plan = make_plan(node, request);
        REQUIRE(node.gpus.size() == 2);
        CHECK(node.gpus[0].place.address.to_string() == "0000:04:00.0");
        for (const auto& task : plan.tasks) {
            CHECK(task.hcas.at(0).name == "mlx5_0");
            CHECK(task.hcas.at(0).distance == Distance::pix);
            CHECK(task.hcas.at(0).netdev == "hsi0");
        }
    }
    SECTION("MeluXina: mlx5_0 (43:00.0) was captured with its port DOWN") {
        Node node = load_xml(dir + "/psmgmt-mel2001.xml");
        PlanRequest request;
        request.tasks = 4;
        Plan plan = make_plan(node, request);
        CHECK(task_on_gpu(plan, "0000:84:00.0").hcas.at(0).pci == "0000:83:00.0");
        CHECK(task_on_gpu(plan, "0000:84:00.0").hcas.at(0).distance == Distance::pix);
        // The GPU beside the DOWN HCA falls back to the only ACTIVE one, across sockets.
        CHECK(task_on_gpu(plan, "0000:44:00.0").hcas.at(0).pci == "0000:83:00.0");
        CHECK_FALSE(task_on_gpu(plan, "0000:44:00.0").gdr);
        request.hcas.require_active = false;
        Plan any = make_plan(node, request);
        CHECK(task_on_gpu(any, "0000:44:00.0").hcas.at(0).pci == "0000:43:00.0");
    }
    SECTION("DGX-2: 16 GPUs, no HCA") {
        Node node = load_xml(dir + "/hwloc-nvidiaDGX2.xml");
        CHECK(node.gpus.size() == 16);
        CHECK(node.hcas.empty());
    }
}

int main(int argc, char** argv) {
    std::string dir = trellis::test::shared_topology_dir();
    if (!fs::is_directory(dir)) {
        std::cout << "SKIP: no shared topology fixtures at " << dir << "\n";
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
