// SPDX-License-Identifier: Apache-2.0
// oneDNN falls back to its reference kernels (impl_info_str "ref:...") when none of its
// optimised ones accepts a shape, layout and ISA: correct, but hundreds of times slower.
// ResNet-50 at 64x64 under an AVX2 CPU ran its last stage's 3x3 backward-weights pass (2x2
// maps) on one, 9.6 s a call, and trained at a tenth of PyTorch's speed. Layers check what
// oneDNN picked when they create a primitive, take another implementation, layout or
// algorithm when it is a reference one, and refuse to train rather than run one.
#pragma once

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

namespace trellis::nn::cpu {

bool is_reference(const std::string& implementation);

// Moves `pd` on to its next implementation while it is a reference one; false when only
// reference implementations are left. With oneDNN 2 the operation descriptor `pd` was made
// from must still be alive (its implementation iterator reads it): dnnl_version.hpp's
// Implementation::past_reference calls this where it is.
template <class PrimitiveDesc>
bool skip_reference(PrimitiveDesc& pd) {
    while (is_reference(pd.impl_info_str()))
        if (!pd.next_impl()) return false;
    return true;
}

// The refusal: which layer, which pass, what oneDNN offered, and the ISA it was allowed.
[[noreturn]] void refuse_reference(const std::string& layer, const std::string& pass,
                                   const std::string& implementation);

}  // namespace trellis::nn::cpu
