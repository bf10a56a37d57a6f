// SPDX-License-Identifier: Apache-2.0
// Dropout's mask on the host (nn/dropout.hpp has the rest).
#pragma once

#include "trainer/nn/dropout.hpp"

namespace trellis::nn::cpu {

class Dropout : public nn::Dropout {
public:
    using nn::Dropout::Dropout;

protected:
    tensor::Tensor masked(const tensor::Tensor& in, std::uint64_t key, std::uint64_t threshold,
                          float scale) const override;
};

}  // namespace trellis::nn::cpu
