// The device files a step's tasks need inside the container: the NVIDIA nodes of its GPUs
// (with the driver's control and UVM nodes) and the verbs nodes of its HCAs (with rdma_cm),
// those that exist on this node.
#pragma once

#include <string>
#include <vector>

namespace trellis::agent {

// gpus: CUDA device numbers; hcas: verbs device names (mlx5_0). dev and sys: the roots
// (/dev and /sys/class/infiniband), replaceable by tests.
std::vector<std::string> device_files(const std::vector<int>& gpus, const std::vector<std::string>& hcas,
                                      const std::string& dev = "/dev",
                                      const std::string& infiniband_sys = "/sys/class/infiniband");

}  // namespace trellis::agent
