// SPDX-License-Identifier: Apache-2.0
// Slurm's GPUs on the topology's terms: gres.conf read as Slurm 22.05 reads it, device files
// tied to GPUs by the NVIDIA driver's minor numbers, and Slurm's choice of numbering.
#include "tests/catch.hpp"

#include <filesystem>
#include <fstream>

#include "fixtures.hpp"
#include "topology/discovery.hpp"
#include "topology/gpu_minors.hpp"
#include "slurm/slurm_config.hpp"
#include "slurm/step_gpus.hpp"

using namespace trellis::topology;
using namespace trellis::slurm;
namespace fs = std::filesystem;

namespace {

using Scratch = trellis::test::Scratch;

// The driver's table for the 8-GPU fixture with minors rotated against PCI order: the GPU at
// PCI position k has minor (k + 3) % 8.
void write_rotated_minors(const Scratch& dir, const Node& node) {
    for (const auto& gpu : node.gpus)
        dir.write("nvidia/gpus/" + gpu.place.address.to_string() + "/information",
                  "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 95\nDevice Minor: \t " +
                      std::to_string((gpu.index + 3) % 8) + "\nBus Location: \t " + gpu.place.address.to_string() +
                      "\n");
}

}  // namespace

TEST_CASE("gres.conf: this node's GPU files in order, host lists expanded by libslurm") {
    Scratch dir;
    std::string gres = dir.write("gres.conf",
                                 "# a comment\n"
                                 "NodeName=n[1-2] Name=gpu File=/dev/nvidia[0-3]   # four each\n"
                                 "nodename=n3 name=gpu type=a100 file=/dev/nvidia[4-5],/dev/nvidia1\n"
                                 "NodeName=n4 Name=gpu Count=2\n");
    auto n2 = read_gres_gpus(gres, "n2");
    CHECK(n2.configured);
    CHECK_FALSE(n2.autodetect);
    CHECK(n2.files == std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"});
    CHECK(read_gres_gpus(gres, "n3").files == std::vector<std::string>{"/dev/nvidia4", "/dev/nvidia5", "/dev/nvidia1"});
    CHECK(read_gres_gpus(gres, "n4").configured);  // GPUs without files: Slurm sets no numbers
    CHECK_FALSE(read_gres_gpus(gres, "n9").configured);
    CHECK_FALSE(read_gres_gpus(dir.path / "missing.conf", "n1").configured);

    // Slurm's other spellings, and the order it reads lines in: those for every node first.
    std::string other = dir.write("other.conf",
                                  "NodeName=n1 Name=gpu Files=/dev/nvidia[2-3]\n"
                                  "Name=gpu File=/dev/nvidia1\n"
                                  "NodeName=n1 Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/x\n");
    CHECK(read_gres_gpus(other, "n1").files ==
          std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia0"});

    std::string detect = dir.write("detect.conf", "AutoDetect=nvml\nNodeName=n9 AutoDetect=off\n");
    CHECK(read_gres_gpus(detect, "n1").autodetect);
    CHECK_FALSE(read_gres_gpus(detect, "n9").configured);
}

TEST_CASE("constrained devices need task/cgroup and ConstrainDevices=yes, as Slurm decides") {
    Scratch dir;
    auto files = SlurmConfigFiles::beside(dir.write("slurm.conf", "TaskPlugin=task/cgroup,task/affinity\n"));
    CHECK(files.gres_conf == (dir.path / "gres.conf").string());
    CHECK_FALSE(devices_constrained(files));  // no cgroup.conf
    dir.write("cgroup.conf", "ConstrainCores=yes\nConstrainDevices=yes\n");
    CHECK(devices_constrained(files));
    dir.write("cgroup.conf", "constraindevices=true\n");  // Slurm's booleans: yes, true, 1, up
    CHECK(devices_constrained(files));
    dir.write("slurm.conf", "TaskPlugin=task/affinity\n");
    CHECK_FALSE(devices_constrained(files));
}

TEST_CASE("a node's address is its NodeAddr, else its name") {
    Scratch dir;
    std::string conf = dir.write("slurm.conf",
                                 "NodeName=DEFAULT CPUs=2\nNodeName=n[1-2] NodeAddr=10.0.0.[7-8]\n"
                                 "NodeName=n3 NodeAddr=127.0.0.1 Port=1\nNodeName=n4 CPUs=4\n"
                                 "NodeName=n5 NodeHostname=c17\n");
    CHECK(node_address(conf, "n2") == "10.0.0.8");
    CHECK(node_address(conf, "n3") == "127.0.0.1");
    CHECK(node_address(conf, "n4") == "n4");
    CHECK(node_address(conf, "n5") == "c17");
    CHECK(node_addresses(conf, {"n1", "n4", "n5"}) == std::vector<std::string>{"10.0.0.7", "n4", "c17"});
}

TEST_CASE("device numbers are the file name's trailing digits") {
    CHECK(device_number_of("/dev/nvidia12") == 12);
    CHECK(device_number_of("/dev/dri/renderD129") == 129);
    CHECK(device_number_of("/dev/nvidiactl") == -1);
}

TEST_CASE("Slurm's GPU indices reach the GPUs whose device files they name") {
    Scratch dir;
    Node node = load_xml(trellis::test::topology_fixture("two-level-switch-8gpu.xml"));
    write_rotated_minors(dir, node);
    REQUIRE(read_nvidia_minors(node, (dir.path / "nvidia").string()) == 8);
    CHECK(node.gpus[0].minor == 3);

    GresGpus gres;
    gres.configured = true;
    for (int i = 0; i < 8; ++i) gres.files.push_back("/dev/nvidia" + std::to_string(i));
    // gres index 0 is /dev/nvidia0, minor 0: the GPU at PCI position 5.
    CHECK(map_step_gpus(node, gres, {0, 1}).indices == std::vector<int>{5, 6});
    CHECK(map_step_gpus(node, gres, {3}).indices == std::vector<int>{0});
    CHECK(map_step_gpus(node, gres, {}).indices.empty());
    CHECK_THROWS_WITH(map_step_gpus(node, gres, {8}), Catch::Contains("gres.conf lists 8 GPUs"));
    gres.files[2] = "/dev/nvidia9";
    CHECK_THROWS_WITH(map_step_gpus(node, gres, {2}), Catch::Contains("/dev/nvidia9 is none of"));

    SECTION("without the driver's table: PCI order, said in a warning") {
        Node bare = load_xml(trellis::test::topology_fixture("two-level-switch-8gpu.xml"));
        gres.files[2] = "/dev/nvidia2";
        auto step = map_step_gpus(bare, gres, {0, 1});
        CHECK(step.indices == std::vector<int>{0, 1});
        REQUIRE(step.warnings.size() == 1);
        CHECK(step.warnings[0].find("PCI order") != std::string::npos);
    }
    SECTION("AutoDetect: Slurm orders the GPUs by PCI bus id") {
        GresGpus detected;
        detected.configured = detected.autodetect = true;
        CHECK(map_step_gpus(node, detected, {0, 7}).indices == std::vector<int>{0, 7});
        // With File= too, Slurm sorts those GPUs by PCI bus id, whatever gres.conf's order.
        detected.files = {"/dev/nvidia7", "/dev/nvidia0"};  // PCI positions 4 and 5
        CHECK(map_step_gpus(node, detected, {0}).indices == std::vector<int>{4});
        CHECK(map_step_gpus(node, detected, {1}).in_gres_order == std::vector<int>{5});
    }
}

TEST_CASE("the driver's table: a file without a minor or two GPUs with one minor are refused") {
    Scratch dir;
    Node node = load_xml(trellis::test::topology_fixture("two-level-switch-8gpu.xml"));
    CHECK(read_nvidia_minors(node, (dir.path / "absent").string()) == 0);
    std::string pci = node.gpus[0].place.address.to_string();
    dir.write("bad/gpus/" + pci + "/information", "Model: x\n");
    CHECK_THROWS_WITH(read_nvidia_minors(node, (dir.path / "bad").string()), Catch::Contains("no 'Device Minor"));
    dir.write("twice/gpus/" + pci + "/information", "Device Minor: 1\n");
    dir.write("twice/gpus/" + node.gpus[1].place.address.to_string() + "/information", "Device Minor: 1\n");
    CHECK_THROWS_WITH(read_nvidia_minors(node, (dir.path / "twice").string()), Catch::Contains("to two GPUs"));
}
