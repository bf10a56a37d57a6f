// SPDX-License-Identifier: Apache-2.0
#include "trainer/gpu/precision.hpp"

namespace trellis::gpu {

const cli::Choices<Precision>& precisions() {
    static const cli::Choices<Precision> choices{
        {{"fp32", Precision::fp32}, {"bf16", Precision::bf16}, {"fp16", Precision::fp16}}};
    return choices;
}

}  // namespace trellis::gpu
