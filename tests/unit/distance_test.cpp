// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include "fixtures.hpp"
#include "topology/device_matrix.hpp"
#include "topology/discovery.hpp"
#include "topology/distance.hpp"

using namespace trellis::topology;

namespace {

PciPlace place(unsigned bus, std::vector<PciBridge> bridges, std::vector<int> numa) {
    PciPlace p;
    p.address.bus = bus;
    p.bridges = std::move(bridges);
    p.numa = std::move(numa);
    return p;
}

const PciBridge host_a{1, true}, host_b{2, true}, root{10, false}, up{11, false}, down1{12, false}, down2{13, false},
    up2{14, false}, down3{15, false};

Distance between(const Node& node, const std::string& a, const std::string& b) {
    DeviceMatrix m = device_matrix(node);
    auto index = [&](const std::string& label) {
        for (size_t i = 0; i < m.labels.size(); ++i)
            if (m.labels[i] == label) return i;
        FAIL("no device " << label);
        return size_t{0};
    };
    return m.distances[index(a)][index(b)];
}

}  // namespace

TEST_CASE("distance classes from bridge chains") {
    auto gpu = place(3, {host_a, root, up, down1}, {0});
    CHECK(distance(gpu, gpu) == Distance::same);
    SECTION("same switch, one bridge each side: PIX") {
        CHECK(distance(gpu, place(4, {host_a, root, up, down2}, {0})) == Distance::pix);
    }
    SECTION("same downstream port: PIX") {
        CHECK(distance(gpu, place(4, {host_a, root, up, down1}, {0})) == Distance::pix);
    }
    SECTION("a deeper switch in between: PXB") {
        CHECK(distance(gpu, place(5, {host_a, root, up, down2, up2, down3}, {0})) == Distance::pxb);
    }
    SECTION("only the host bridge in common: PHB") {
        CHECK(distance(gpu, place(6, {host_a, PciBridge{20, false}}, {0})) == Distance::phb);
    }
    SECTION("different host bridges on one NUMA node: NODE") {
        CHECK(distance(gpu, place(7, {host_b, PciBridge{21, false}}, {0})) == Distance::node);
    }
    SECTION("different NUMA nodes: SYS") {
        CHECK(distance(gpu, place(8, {host_b, PciBridge{21, false}}, {1})) == Distance::sys);
    }
    SECTION("no NUMA information and no common bridge: SYS") {
        CHECK(distance(place(1, {}, {}), place(2, {}, {})) == Distance::sys);
    }
}

TEST_CASE("names round-trip and order nearest first") {
    for (auto d : {Distance::same, Distance::pix, Distance::pxb, Distance::phb, Distance::node, Distance::sys})
        CHECK(parse_distance(distance_name(d)) == d);
    CHECK(distance_name(Distance::pix) == "PIX");
    CHECK_FALSE(parse_distance("FAR"));
    CHECK(Distance::pix < Distance::pxb);
    CHECK(Distance::node < Distance::sys);
    CHECK(gdr_eligible(Distance::pxb));
    CHECK_FALSE(gdr_eligible(Distance::phb));
}

TEST_CASE("matrix of the two-level switch fixture") {
    Node node = load_xml(trellis::test::topology_fixture("two-level-switch-8gpu.xml"));
    CHECK(between(node, "GPU0", "GPU0") == Distance::same);
    CHECK(between(node, "GPU0", "GPU1") == Distance::pix);
    CHECK(between(node, "GPU0", "mlx5_0") == Distance::pix);
    CHECK(between(node, "GPU0", "mlx5_1") == Distance::pix);
    CHECK(between(node, "GPU0", "GPU2") == Distance::pxb);
    CHECK(between(node, "GPU0", "mlx5_3") == Distance::pxb);
    CHECK(between(node, "GPU0", "GPU4") == Distance::sys);
    CHECK(between(node, "mlx5_7", "GPU0") == Distance::sys);
    CHECK(between(node, "GPU6", "mlx5_6") == Distance::pix);
}

TEST_CASE("root ports of one host bridge are PHB apart") {
    Node node = load_xml(trellis::test::topology_fixture("no-hca-2gpu.xml"));
    CHECK(between(node, "GPU0", "GPU1") == Distance::phb);
    Node shared = load_xml(trellis::test::topology_fixture("shared-hca-4gpu.xml"));
    CHECK(between(shared, "GPU1", "mlx5_0") == Distance::pix);
    CHECK(between(shared, "GPU1", "mlx5_1") == Distance::phb);
}
