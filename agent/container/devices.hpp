// SPDX-License-Identifier: Apache-2.0
// The device files a step's tasks need inside the container: the NVIDIA nodes of its GPUs
// (with the driver's control and UVM nodes) and the verbs nodes of its HCAs (with rdma_cm),
// those that exist on this node; and the one list of device nodes a container gets, in the
// vocabulary of CDI's edits, whichever produced them.
#pragma once

#include <string>
#include <vector>

#include "agent/container/cdi/resolved_edits.hpp"
#include "topology/plan.hpp"

namespace trellis::agent {

// The device files of every GPU and HCA in the plan: what a step's container needs bound in.
// A GPU is its device minor (the driver's number, which need not follow PCI order) or, where
// the driver's table is absent, its place among the vendor's GPUs.
std::vector<std::string> plan_device_files(const topology::Plan& plan);

// gpus: device minor numbers (/dev/nvidiaN, Gpu::minor); hcas: verbs device names (mlx5_0). dev and sys: the roots
// (/dev and /sys/class/infiniband), replaceable by tests.
std::vector<std::string> device_files(const std::vector<int>& gpus, const std::vector<std::string>& hcas,
                                      const std::string& dev = "/dev",
                                      const std::string& infiniband_sys = "/sys/class/infiniband");

// The container's device nodes: `files` (each bound at its own path) and the CDI edits'
// nodes, which replace a file bound at the same path and leave `edits` without nodes; nosuid,
// never nodev, as CDI binds them.
std::vector<cdi::BindMount> container_device_nodes(const std::vector<std::string>& files, cdi::ResolvedEdits* edits);

}  // namespace trellis::agent
