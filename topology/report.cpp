// SPDX-License-Identifier: Apache-2.0
#include "topology/report.hpp"

#include <algorithm>

#include "topology/device_matrix.hpp"
#include "topology/text_table.hpp"

namespace trellis::topology {
namespace {

std::string numa_label(int numa) { return numa < 0 ? "-" : std::to_string(numa); }

std::string join_ints(const std::vector<int>& values) {
    std::string out;
    for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
    return out.empty() ? "-" : out;
}

}  // namespace

std::string format_node(const Node& node) {
    std::string out = "host " + node.host + " (" + node.source + "): " + std::to_string(node.packages.size()) +
                      " sockets, " + std::to_string(node.numa_nodes.size()) + " NUMA nodes, " +
                      std::to_string(node.cores.size()) + " cores, " + std::to_string(node.cpus.size()) + " CPUs, " +
                      std::to_string(node.gpus.size()) + " GPUs, " + std::to_string(node.hcas.size()) + " HCAs\n";
    if (!node.this_machine) out += "note: this topology describes another machine\n";

    DeviceMatrix matrix = device_matrix(node);
    if (!matrix.labels.empty()) {
        std::vector<std::string> header{""};
        header.insert(header.end(), matrix.labels.begin(), matrix.labels.end());
        header.insert(header.end(), {"CPU Affinity", "NUMA Affinity"});
        TextTable table(header);
        const size_t gpus = node.gpus.size();
        for (size_t r = 0; r < matrix.labels.size(); ++r) {
            std::vector<std::string> row{matrix.labels[r]};
            for (size_t c = 0; c < matrix.distances[r].size(); ++c) {
                // GPUs joined by NVLink show it, as nvidia-smi does; PCIe classes otherwise.
                int links = r < gpus && c < gpus && !node.nvlinks.empty() ? node.nvlinks[r][c] : 0;
                row.push_back(links ? "NV" + std::to_string(links) : distance_name(matrix.distances[r][c]));
            }
            row.push_back(matrix.places[r]->local_cpus.to_string());
            row.push_back(numa_label(matrix.places[r]->first_numa()));
            table.add(row);
        }
        out += "\n" + table.render();
        out +=
            "\nLegend: X = self, PIX = same PCIe switch, PXB = several PCIe bridges, "
            "PHB = same host bridge,\n        NODE = same NUMA node, SYS = across NUMA "
            "nodes or sockets\n";
        if (!node.nvlinks.empty())
            out += "        NV# = # NVLinks (directly or through NVSwitches)\n";
        else if (node.gpus.size() > 1)
            out +=
                "NVLink: not known for this topology (hwloc reads it from NVML: discover the node live\n"
                "        with the NVIDIA driver loaded, or save its XML there); links shown are PCIe\n";
    }

    if (!node.gpus.empty()) {
        TextTable gpus({"GPU", "PCI", "vendor", "device", "NUMA", "CPUs"});
        for (const auto& gpu : node.gpus)
            gpus.add({std::to_string(gpu.index), gpu.place.address.to_string(), vendor_name(gpu.vendor),
                      gpu.os_name.empty() ? "-" : gpu.os_name, numa_label(gpu.place.first_numa()),
                      gpu.place.local_cpus.to_string()});
        out += "\n" + gpus.render();
    }
    if (!node.hcas.empty()) {
        TextTable hcas({"HCA", "PCI", "port", "state", "link", "rate", "netdev", "NUMA"});
        for (const auto& hca : node.hcas)
            for (const auto& port : hca.ports)
                hcas.add({hca.name, hca.place.address.to_string(), std::to_string(port.number),
                          port_state_name(port.state), port.link_layer.empty() ? "-" : port.link_layer,
                          port.rate.empty() ? "-" : port.rate, port.netdev.empty() ? "-" : port.netdev,
                          numa_label(hca.place.first_numa())});
        out += "\n" + hcas.render();
    }
    TextTable numa({"NUMA", "socket", "CPUs"});
    for (const auto& n : node.numa_nodes)
        numa.add({std::to_string(n.os_index), numa_label(n.package), n.cpus.to_string()});
    out += "\n" + numa.render();
    return out;
}

std::string format_plan(const Plan& plan, const std::vector<int>& global_ranks) {
    size_t count = plan.tasks.size();
    std::string out = "trellis binding on " + plan.host + ": policy " + policy_name(plan.policy) + ", " +
                      std::to_string(count) + (count == 1 ? " task" : " tasks") +
                      (plan.bind_cpus ? "" : ", CPUs and memory not bound") + "\n";
    bool ranks = global_ranks.size() == count;
    // GPU: the node's numbering (PCI order); CUDA: the numbers the task is given for them.
    std::vector<std::string> header{"task", "GPU", "CUDA", "HCA", "distance", "CPUs", "NUMA", "GDR", "warnings"};
    if (ranks) header.insert(header.begin(), "rank");
    TextTable table(header);
    for (const auto& task : plan.tasks) {
        std::string gpus, devices, hcas, warnings;
        for (const auto& gpu : task.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu.index);
        for (const auto& v : task.visible) devices += (devices.empty() ? "" : ",") + std::to_string(v.device);
        for (const auto& h : task.hcas) hcas += (hcas.empty() ? "" : ",") + h.name + ":" + std::to_string(h.port);
        for (const auto& w : task.warnings) warnings += (warnings.empty() ? "" : "; ") + w;
        std::vector<std::string> row{std::to_string(task.local_rank),
                                     gpus.empty() ? "-" : gpus,
                                     devices.empty() ? "-" : devices,
                                     hcas.empty() ? "-" : hcas,
                                     task.hcas.empty() ? "-" : distance_name(task.distance),
                                     task.cpus.to_string(),
                                     join_ints(task.numa),
                                     task.gdr ? "yes" : "no",
                                     warnings};
        if (ranks) row.insert(row.begin(), std::to_string(global_ranks[static_cast<size_t>(task.local_rank)]));
        table.add(row);
    }
    out += table.render();
    std::string nccl;
    for (const auto& h : plan.node_hcas) nccl += (nccl.empty() ? "" : ",") + h.name + ":" + std::to_string(h.port);
    if (!plan.node_hcas.empty())
        out += plan.hcas_restricted
                   ? "NCCL: NCCL_IB_HCA=\"=" + nccl + "\" on every task (the leading '=': these names exactly)\n"
                   : "NCCL: every task may use all HCAs (" + nccl + "), NCCL_IB_HCA unset\n";
    for (const auto& w : plan.warnings) out += "warning: " + w + "\n";
    return out;
}

}  // namespace trellis::topology
