// SPDX-License-Identifier: Apache-2.0
// The model of one node that the planner works on: what hwloc discovered (or an XML file
// described), reduced to the things binding decisions need. It holds no hwloc objects, so
// tests can build or load one and plans are plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/cpu_set.hpp"
#include "topology/pci.hpp"

namespace trellis::topology {

struct Package {
    int os_index = -1;
    CpuSet cpus;
};

struct NumaNode {
    int os_index = -1;
    int package = -1;  // os_index of the package holding it, -1 if unknown
    CpuSet cpus;
};

// A core and its hardware threads (PUs), in hwloc's logical order.
struct Core {
    int package = -1;
    std::vector<int> pus;
};

enum class GpuVendor { nvidia, amd };

struct Gpu {
    int index = 0;         // position among all GPUs of the node, in PCI bus id order
    int vendor_index = 0;  // position among GPUs of the same vendor (CUDA/ROCr device number)
    GpuVendor vendor = GpuVendor::nvidia;
    std::string os_name;  // cuda0, nvml0, rsmi0 ... when the topology has one, else ""
    // The device file's minor number (/dev/nvidiaN), as the NVIDIA driver numbered it: its
    // probe order, which need not be PCI order. -1 when unknown (gpu_minors.hpp).
    int minor = -1;
    PciPlace place;
};

// The numeric port states of the verbs API (IBV_PORT_*), as hwloc reports them.
enum class PortState { unknown = 0, down = 1, init = 2, armed = 3, active = 4, active_defer = 5 };

struct HcaPort {
    int number = 1;
    PortState state = PortState::unknown;
    std::string link_layer;  // InfiniBand or Ethernet, when known (live machines only)
    std::string rate;        // "200 Gb/sec (4X HDR)", when known (live machines only)
    std::string netdev;      // the IPoIB (or RoCE Ethernet) netdev on this port, "" if none
    bool active() const { return state == PortState::active; }
};

struct Hca {
    std::string name;  // mlx5_0
    PciPlace place;
    std::vector<HcaPort> ports;
    const HcaPort* first_active_port() const;
};

struct Node {
    std::string host;
    std::string source;        // "live" or the XML file it was loaded from
    bool this_machine = true;  // false when the topology describes another machine
    CpuSet cpus;               // every PU of the node
    CpuSet allowed_cpus;       // the PUs this process may use (its affinity), on this machine
    std::vector<Package> packages;
    std::vector<NumaNode> numa_nodes;
    std::vector<Core> cores;
    std::vector<Gpu> gpus;  // PCI bus id order
    std::vector<Hca> hcas;  // PCI bus id order
    // NVLinks between GPUs (by index), as nvidia-smi topo -m counts them: direct links, or
    // through NVSwitches the links of the GPU with fewer. Empty when the topology does not
    // say (nvlink.hpp).
    std::vector<std::vector<int>> nvlinks;

    // The package os_index each PU belongs to, -1 if none.
    int package_of(int pu) const;
    // NUMA nodes (os indices) whose CPUs intersect the set.
    std::vector<int> numa_of(const CpuSet& cpus) const;
};

std::string port_state_name(PortState state);
const char* vendor_name(GpuVendor vendor);

}  // namespace trellis::topology
