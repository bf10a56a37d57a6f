// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <cstdio>
#include <fstream>

#include "fixtures.hpp"
#include "topology/discovery.hpp"

using namespace trellis::topology;
using trellis::test::topology_fixture;

TEST_CASE("an 8-GPU two-level-switch node from XML") {
    Node node = load_xml(topology_fixture("two-level-switch-8gpu.xml"));
    CHECK(node.host == "sw8");
    CHECK_FALSE(node.this_machine);
    CHECK(node.cpus.to_string() == "0-63");
    CHECK(node.packages.size() == 2);
    CHECK(node.numa_nodes.size() == 2);
    CHECK(node.numa_nodes[1].cpus.to_string() == "16-31,48-63");
    CHECK(node.numa_nodes[1].package == 1);
    REQUIRE(node.cores.size() == 32);
    CHECK(node.cores[0].pus == std::vector<int>{0, 32});

    REQUIRE(node.gpus.size() == 8);
    for (int i = 0; i < 8; ++i) {
        CHECK(node.gpus[i].index == i);
        CHECK(node.gpus[i].vendor_index == i);
        CHECK(node.gpus[i].os_name == "cuda" + std::to_string(i));
        CHECK(node.gpus[i].vendor == GpuVendor::nvidia);
    }
    CHECK(node.gpus[0].place.address < node.gpus[1].place.address);
    CHECK(node.gpus[0].place.first_numa() == 0);
    CHECK(node.gpus[5].place.first_numa() == 1);
    CHECK(node.gpus[5].place.local_cpus.to_string() == "16-31,48-63");

    REQUIRE(node.hcas.size() == 8);
    CHECK(node.hcas[3].name == "mlx5_3");
    REQUIRE(node.hcas[3].ports.size() == 1);
    CHECK(node.hcas[3].ports[0].active());
    CHECK(node.hcas[3].ports[0].netdev == "ib3");
}

TEST_CASE("HCA ports: states per port, netdevs by port") {
    Node node = load_xml(topology_fixture("down-port-2gpu.xml"));
    REQUIRE(node.hcas.size() == 2);
    const Hca& mlx0 = node.hcas[0];
    REQUIRE(mlx0.ports.size() == 2);
    CHECK(mlx0.ports[0].state == PortState::down);
    CHECK(mlx0.ports[0].netdev == "ib0");
    CHECK(mlx0.ports[1].state == PortState::active);
    CHECK(mlx0.ports[1].netdev == "ib1");
    REQUIRE(mlx0.first_active_port());
    CHECK(mlx0.first_active_port()->number == 2);
    CHECK_FALSE(node.hcas[1].first_active_port());
    CHECK(port_state_name(node.hcas[1].ports[0].state) == "DOWN");
}

TEST_CASE("AMD GPUs count, a BMC display and an Ethernet NIC do not") {
    Node node = load_xml(topology_fixture("amd-2gpu.xml"));
    REQUIRE(node.gpus.size() == 2);
    CHECK(node.gpus[0].vendor == GpuVendor::amd);
    CHECK(node.gpus[1].os_name == "rsmi1");
    CHECK(node.gpus[1].vendor_index == 1);
    REQUIRE(node.hcas.size() == 1);
    CHECK(node.hcas[0].ports[0].netdev == "ens1f0");
}

TEST_CASE("CPU-only node with NUMA nodes inside sockets") {
    Node node = load_xml(topology_fixture("cpu-only-4numa.xml"));
    CHECK(node.gpus.empty());
    REQUIRE(node.numa_nodes.size() == 4);
    CHECK(node.numa_nodes[2].cpus.to_string() == "8-11");
    CHECK(node.numa_nodes[3].package == 1);
    REQUIRE(node.hcas.size() == 1);
    CHECK(node.hcas[0].place.numa == std::vector<int>{2});
    CHECK(node.numa_of(CpuSet::parse("3-4")) == std::vector<int>{0, 1});
}

TEST_CASE("bad XML is refused with the file named") {
    CHECK_THROWS_WITH(load_xml("/nonexistent/topo.xml"),
                      Catch::Contains("cannot read topology XML '/nonexistent/topo.xml'"));
    std::string path = "discovery_test_bad.xml";
    {
        std::ofstream out(path);
        out << "this is not XML\n";
    }
    CHECK_THROWS_WITH(load_xml(path), Catch::Contains("is not an hwloc XML topology"));
    {
        std::ofstream out(path);
        out << "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\"";
    }
    CHECK_THROWS_AS(load_xml(path), trellis::UsageError);
    std::remove(path.c_str());
}
