// SPDX-License-Identifier: Apache-2.0
#include "topology/discovery.hpp"

#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/error.hpp"
#include "common/host.hpp"
#include "topology/hca_sysfs.hpp"
#include "topology/nvlink.hpp"

namespace trellis::topology {
namespace {

using TopologyHandle = std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)>;

CpuSet to_cpuset(hwloc_const_bitmap_t bitmap) {
    CpuSet set;
    if (!bitmap) return set;
    unsigned index;
    hwloc_bitmap_foreach_begin(index, bitmap) { set.add(static_cast<int>(index)); }
    hwloc_bitmap_foreach_end();
    return set;
}

CpuSet process_affinity() {
    CpuSet set;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return set;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &mask)) set.add(cpu);
    return set;
}

CpuSet online_cpus() {
    std::ifstream in("/sys/devices/system/cpu/online");
    std::string list;
    if (in && std::getline(in, list)) {
        try {
            return CpuSet::parse(list);
        } catch (const UsageError&) {}
    }
    return process_affinity();
}

std::string short_host_name() {
    std::string host = host_name();
    return host.substr(0, host.find('.'));
}

PciPlace place_of(hwloc_topology_t topo, hwloc_obj_t pcidev) {
    PciPlace place;
    const auto& attr = pcidev->attr->pcidev;
    place.address = {attr.domain, attr.bus, attr.dev, attr.func};
    place.class_id = attr.class_id;
    place.vendor_id = attr.vendor_id;
    place.device_id = attr.device_id;
    for (hwloc_obj_t up = pcidev->parent; up && up->type == HWLOC_OBJ_BRIDGE; up = up->parent)
        place.bridges.push_back({up->gp_index, up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST});
    std::reverse(place.bridges.begin(), place.bridges.end());

    hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topo, pcidev);
    if (local) {
        place.local_cpus = to_cpuset(local->cpuset);
        for (int numa : to_cpuset(local->nodeset)) place.numa.push_back(numa);
    }
    return place;
}

std::vector<hwloc_obj_t> os_devices_of(hwloc_obj_t pcidev, hwloc_obj_osdev_type_t type) {
    std::vector<hwloc_obj_t> found;
    for (hwloc_obj_t child = pcidev->io_first_child; child; child = child->next_sibling)
        if (child->type == HWLOC_OBJ_OS_DEVICE && child->attr->osdev.type == type) found.push_back(child);
    return found;
}

bool is_gpu(const PciPlace& place) {
    bool gpu_class = place.class_id == 0x0300 || place.class_id == 0x0302;
    return gpu_class && (place.vendor_id == 0x10de || place.vendor_id == 0x1002);
}

std::string gpu_os_name(hwloc_obj_t pcidev) {
    // Prefer the name a framework would use: CUDA's, then NVML's, then ROCm SMI's.
    for (const char* prefix : {"cuda", "nvml", "rsmi"})
        for (hwloc_obj_t child = pcidev->io_first_child; child; child = child->next_sibling)
            if (child->type == HWLOC_OBJ_OS_DEVICE && child->name &&
                std::strncmp(child->name, prefix, std::strlen(prefix)) == 0)
                return child->name;
    return "";
}

std::vector<HcaPort> ports_of(hwloc_obj_t openfabrics, hwloc_obj_t pcidev) {
    std::vector<HcaPort> ports;
    for (unsigned i = 0; i < openfabrics->infos_count; ++i) {
        unsigned number = 0, state = 0;
        int consumed = 0;  // stays 0 unless the whole "Port<N>State" pattern matched
        const auto& info = openfabrics->infos[i];
        if (std::sscanf(info.name, "Port%uState%n", &number, &consumed) == 1 && consumed > 0 &&
            info.name[consumed] == '\0' && std::sscanf(info.value, "%u", &state) == 1)
            ports.push_back({static_cast<int>(number), static_cast<PortState>(state), "", "", ""});
    }
    std::sort(ports.begin(), ports.end(), [](const HcaPort& a, const HcaPort& b) { return a.number < b.number; });

    // IPoIB (or RoCE) netdevs sit beside the verbs device under the same PCI function; hwloc
    // records which port each belongs to.
    for (hwloc_obj_t net : os_devices_of(pcidev, HWLOC_OBJ_OSDEV_NETWORK)) {
        const char* port_info = hwloc_obj_get_info_by_name(net, "Port");
        int port_number = port_info ? std::atoi(port_info) : 1;
        for (auto& port : ports)
            if (port.number == port_number && port.netdev.empty()) port.netdev = net->name;
    }
    return ports;
}

Node build_node(hwloc_topology_t topo, bool live, const std::string& source) {
    Node node;
    node.source = source;
    hwloc_obj_t root = hwloc_get_root_obj(topo);
    const char* host = hwloc_obj_get_info_by_name(root, "HostName");
    // An XML file without a host name is known by its file name.
    node.host = host ? host : live ? short_host_name() : std::filesystem::path(source).stem().string();
    node.cpus = to_cpuset(hwloc_topology_get_complete_cpuset(topo));
    node.allowed_cpus = to_cpuset(hwloc_topology_get_allowed_cpuset(topo));
    if (live) {
        node.this_machine = true;
        CpuSet affinity = process_affinity();
        if (!affinity.empty()) node.allowed_cpus = node.allowed_cpus & affinity;
    } else {
        // An XML file stands for this machine only if hwloc agrees and the CPUs match.
        node.this_machine = hwloc_topology_is_thissystem(topo) && node.cpus == online_cpus();
    }

    for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj));)
        node.packages.push_back({static_cast<int>(obj->os_index), to_cpuset(obj->cpuset)});
    if (node.packages.empty()) node.packages.push_back({0, node.cpus});

    for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, obj));) {
        NumaNode numa{static_cast<int>(obj->os_index), -1, to_cpuset(obj->cpuset)};
        if (!numa.cpus.empty()) numa.package = node.package_of(numa.cpus.first());
        node.numa_nodes.push_back(numa);
    }

    for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, obj));) {
        Core core;
        for (int pu : to_cpuset(obj->cpuset)) core.pus.push_back(pu);
        if (core.pus.empty()) continue;
        core.package = node.package_of(core.pus.front());
        node.cores.push_back(core);
    }
    if (node.cores.empty())  // some XML files have no Core level: each PU is its own core
        for (int pu : node.cpus) node.cores.push_back({node.package_of(pu), {pu}});

    for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(topo, pci));) {
        PciPlace place = place_of(topo, pci);
        if (is_gpu(place)) {
            Gpu gpu;
            gpu.vendor = place.vendor_id == 0x10de ? GpuVendor::nvidia : GpuVendor::amd;
            gpu.os_name = gpu_os_name(pci);
            gpu.place = place;
            node.gpus.push_back(gpu);
        }
        for (hwloc_obj_t fabric : os_devices_of(pci, HWLOC_OBJ_OSDEV_OPENFABRICS)) {
            Hca hca{fabric->name ? fabric->name : "", place, ports_of(fabric, pci)};
            if (live) read_hca_sysfs(hca);
            node.hcas.push_back(hca);
        }
    }

    std::sort(node.gpus.begin(), node.gpus.end(),
              [](const Gpu& a, const Gpu& b) { return a.place.address < b.place.address; });
    int per_vendor[2] = {0, 0};
    for (size_t i = 0; i < node.gpus.size(); ++i) {
        node.gpus[i].index = static_cast<int>(i);
        node.gpus[i].vendor_index = per_vendor[static_cast<int>(node.gpus[i].vendor)]++;
    }
    std::sort(node.hcas.begin(), node.hcas.end(), [](const Hca& a, const Hca& b) {
        return a.place.address != b.place.address ? a.place.address < b.place.address : a.name < b.name;
    });
    read_nvlinks(topo, node);
    return node;
}

TopologyHandle new_topology() {
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) != 0) throw TopologyError("hwloc_topology_init failed");
    TopologyHandle handle(topo, &hwloc_topology_destroy);
    // Bridges must stay: distance classes count them.
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    return handle;
}

}  // namespace

Node discover_live() {
    TopologyHandle topo = new_topology();
    if (hwloc_topology_load(topo.get()) != 0)
        throw TopologyError(std::string("hwloc could not discover this machine: ") + std::strerror(errno));
    return build_node(topo.get(), true, "live");
}

Node load_xml(const std::string& path) {
    std::ifstream probe(path);
    if (!probe) throw UsageError("cannot read topology XML '" + path + "': " + std::strerror(errno));
    std::string head(256, '\0');
    probe.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(probe.gcount()));
    if (head.find("<topology") == std::string::npos)
        throw UsageError("'" + path + "' is not an hwloc XML topology (no <topology> element)");

    TopologyHandle topo = new_topology();
    if (hwloc_topology_set_xml(topo.get(), path.c_str()) != 0 || hwloc_topology_load(topo.get()) != 0)
        throw UsageError("'" + path + "' is not a valid hwloc XML topology");
    return build_node(topo.get(), false, path);
}

Node load_node(const std::string& xml_path) { return xml_path.empty() ? discover_live() : load_xml(xml_path); }

}  // namespace trellis::topology
