// SPDX-License-Identifier: Apache-2.0
// The fused-norm-join speed item (gpu/speedups.hpp): a residual block's last batch norm, the
// shortcut's sum and the ReLU in one cuDNN call each way (BatchNorm's joined path), which
// saves a write and a read of the block's output in each direction.
#pragma once

#include "trainer/nn/backend.hpp"
#include "trainer/cuda/batch_norm.hpp"
#include "trainer/cuda/residual_join.hpp"

namespace trellis::cuda {

class FusedNormJoin : public nn::NormalizedJoin {
public:
    FusedNormJoin(CudaContext& context, const nn::BatchNormSpec& norm, const std::string& name)
        : norm_(context, norm, true), join_(context, name) {}

    nn::TensorSpec setup(const nn::TensorSpec& a, const nn::TensorSpec& b) override {
        return join_.setup(norm_.setup(a, true), b);  // the join checks the shapes
    }
    void collect(nn::ParameterStore& store) override { norm_.collect(store); }
    void initialize(std::mt19937_64& rng) override { norm_.initialize(rng); }
    tensor::Tensor forward(const tensor::Tensor& a, const tensor::Tensor& b, nn::Mode mode) override {
        return norm_.forward_joined(a, b, mode);
    }
    Gradients backward(const tensor::Tensor& output_grad) override { return norm_.backward_joined(output_grad); }
    void accumulate(tensor::Tensor& target, const tensor::Tensor& addend) override { join_.accumulate(target, addend); }

private:
    BatchNorm norm_;
    ResidualJoin join_;  // its setup and gradient sum; the norm runs the sum and the ReLU
};

}  // namespace trellis::cuda
