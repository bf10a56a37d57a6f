// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/dropout_mask.hpp"

namespace trellis::nn {

std::uint64_t dropout_key(const DropoutDraw& draw, const std::string& layer) {
    // FNV-1a of the layer's name: the key does not depend on the order layers are built in.
    std::uint64_t name = 0xcbf29ce484222325ull;
    for (unsigned char c : layer) name = (name ^ c) * 0x100000001b3ull;
    return mix(mix(draw.seed ^ name) ^ draw.draw);
}

}  // namespace trellis::nn
