// SPDX-License-Identifier: Apache-2.0
// `trellis-agent check`: what a node offers a training job, and what is wrong with it. GPUs
// (and their driver's device nodes), HCAs with port state, rate and link layer, the
// GPUDirect RDMA module, IPoIB interfaces, container runtimes, and the topology in brief.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/node.hpp"

namespace trellis::agent {

struct CheckExpectations {
    std::optional<int> gpus, hcas;  // at least this many (active HCA ports for HCAs)
    bool container = false;         // a container runtime must be installed
};

struct NodeReport {
    nlohmann::json facts;
    std::vector<std::string> problems;  // each makes the check fail
};

// dev, sys, module_dir: /dev, /sys and /sys/module, replaceable by tests.
NodeReport check_node(const topology::Node& node, const CheckExpectations& expected, const std::string& dev = "/dev",
                      const std::string& sys = "/sys");
std::string format_report(const NodeReport& report);

int check_command(const std::vector<std::string>& args);
std::string check_help();

}  // namespace trellis::agent
