// SPDX-License-Identifier: Apache-2.0
// The device a run trains on: the GPU that --device, --precision and the machine allow, or
// the CPU with the reason, for the header's device line.
#pragma once

#include <memory>
#include <string>

#include "trainer/gpu/accelerator.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

struct OpenedDevice {
    std::unique_ptr<gpu::Accelerator> accelerator;  // null: the CPU
    std::string note;                               // why not the GPU, where --device auto chose the CPU
};

// Throws where the GPU is required (--device cuda, a 16-bit precision) and cannot be used,
// and where the NVIDIA driver is loaded but a CUDA library is not: that is a broken
// installation, not a reason to train a hundred times slower on the CPU.
OpenedDevice open_device(const TrainOptions& options, int local_rank);

}  // namespace trellis::train
