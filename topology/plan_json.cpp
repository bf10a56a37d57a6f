// SPDX-License-Identifier: Apache-2.0
#include "topology/plan_json.hpp"

#include "topology/device_matrix.hpp"

namespace trellis::topology {
namespace {

nlohmann::json gpu_json(const Gpu& gpu) {
    return {{"index", gpu.index},
            {"pci", gpu.place.address.to_string()},
            {"numa", gpu.place.first_numa()},
            {"vendor", vendor_name(gpu.vendor)},
            {"name", gpu.os_name}};
}

nlohmann::json hca_json(const HcaChoice& hca) {
    return {{"name", hca.name}, {"port", hca.port}, {"pci", hca.pci}, {"netdev", hca.netdev}};
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const auto& task : plan.tasks) {
        nlohmann::json gpus = nlohmann::json::array(), hcas = nlohmann::json::array(),
                       visible = nlohmann::json::array();
        for (const auto& v : task.visible) {
            auto j = gpu_json(v.gpu);
            j["device"] = v.device;  // its number in CUDA_VISIBLE_DEVICES/ROCR_VISIBLE_DEVICES
            if (visible.size() < task.gpus.size()) gpus.push_back(j);
            visible.push_back(j);
        }
        for (const auto& hca : task.hcas) {
            auto j = hca_json(hca);
            j["distance"] = distance_name(hca.distance);
            hcas.push_back(j);
        }
        tasks.push_back({{"local_rank", task.local_rank},
                         {"gpus", gpus},
                         {"visible_gpus", visible},
                         {"hcas", hcas},
                         {"cpus", task.cpus.to_string()},
                         {"numa", task.numa},
                         {"distance", task.hcas.empty() ? "" : distance_name(task.distance)},
                         {"gdr", task.gdr},
                         {"env", task.env},
                         {"warnings", task.warnings}});
    }
    nlohmann::json node_hcas = nlohmann::json::array();
    for (const auto& hca : plan.node_hcas) node_hcas.push_back(hca_json(hca));
    return {{"host", plan.host},
            {"policy", policy_name(plan.policy)},
            {"bind_cpus", plan.bind_cpus},
            {"gpu_numbering", gpu_numbering_name(plan.gpu_numbering)},
            {"node_hcas", node_hcas},
            {"hcas_restricted", plan.hcas_restricted},
            {"tasks", tasks},
            {"warnings", plan.warnings}};
}

nlohmann::json node_to_json(const Node& node) {
    nlohmann::json gpus = nlohmann::json::array(), hcas = nlohmann::json::array(), numa_nodes = nlohmann::json::array(),
                   packages = nlohmann::json::array();
    for (const auto& gpu : node.gpus) {
        auto j = gpu_json(gpu);
        j["cpus"] = gpu.place.local_cpus.to_string();
        j["minor"] = gpu.minor;
        gpus.push_back(j);
    }
    for (const auto& hca : node.hcas) {
        nlohmann::json ports = nlohmann::json::array();
        for (const auto& port : hca.ports)
            ports.push_back({{"port", port.number},
                             {"state", port_state_name(port.state)},
                             {"link_layer", port.link_layer},
                             {"rate", port.rate},
                             {"netdev", port.netdev}});
        hcas.push_back({{"name", hca.name},
                        {"pci", hca.place.address.to_string()},
                        {"numa", hca.place.first_numa()},
                        {"cpus", hca.place.local_cpus.to_string()},
                        {"ports", ports}});
    }
    for (const auto& numa : node.numa_nodes)
        numa_nodes.push_back({{"index", numa.os_index}, {"package", numa.package}, {"cpus", numa.cpus.to_string()}});
    for (const auto& package : node.packages)
        packages.push_back({{"index", package.os_index}, {"cpus", package.cpus.to_string()}});

    DeviceMatrix matrix = device_matrix(node);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : matrix.distances) {
        nlohmann::json names = nlohmann::json::array();
        for (Distance d : row) names.push_back(distance_name(d));
        rows.push_back(names);
    }
    return {{"host", node.host},
            {"source", node.source},
            {"this_machine", node.this_machine},
            {"cpus", node.cpus.to_string()},
            {"allowed_cpus", node.allowed_cpus.to_string()},
            {"cores", node.cores.size()},
            {"packages", packages},
            {"numa_nodes", numa_nodes},
            {"gpus", gpus},
            {"hcas", hcas},
            // GPU x GPU NVLink counts; null when the topology does not say.
            {"nvlinks", node.nvlinks.empty() ? nlohmann::json(nullptr) : nlohmann::json(node.nvlinks)},
            {"matrix", {{"devices", matrix.labels}, {"distances", rows}}}};
}

}  // namespace trellis::topology
