// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the GPU's layers: f32, or bf16/fp16 with f32 master weights.
#pragma once

#include "common/cli.hpp"

namespace trellis::gpu {

enum class Precision { fp32, bf16, fp16 };

// Its spellings: fp32, bf16, fp16.
const cli::Choices<Precision>& precisions();

}  // namespace trellis::gpu
