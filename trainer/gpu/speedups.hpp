// SPDX-License-Identifier: Apache-2.0
// The GPU path's speed items that are not yet measured on a GPU, each behind a switch, so
// that scripts/gpu-check can time the safe path against the fast one in the same call and a
// speed item becomes the default only once it was measured. Chosen by TRELLIS_CUDA_SPEEDUPS:
// "none" (the default), "all", or a comma-separated list of their names.
#pragma once

#include <string>

namespace trellis::gpu {

struct Speedups {
    // tf_cnn_benchmarks' synthetic batch is the same at every step: it is copied to the GPU
    // once and kept there, as the PyTorch peer keeps its batch.
    bool synthetic_on_device = false;
    // A convolution's workspace size is the one cuDNN's benchmark reported for the algorithm
    // it chose, not asked again at every call.
    bool workspace_cache = false;
    // Element-wise kernels (ReLU, the residual join, gradient sums) in 16-byte vectors, one
    // kernel per type, instead of 2-byte accesses behind a type switch.
    bool vector_kernels = false;
    // A residual block's last batch norm, the shortcut's sum and the ReLU in one cuDNN call
    // (BN_ADD_ACTIVATION) each way, saving a read and a write of the block's output.
    bool fused_norm_join = false;
    // fp16: the optimizer kernel skips an overflowed step itself and the host reads the flag a
    // step late, so no step waits for the GPU to finish its backward pass.
    bool overflow_on_device = false;
};

// Throws UsageError naming the variable, the unknown name and the accepted ones.
Speedups parse_speedups(const std::string& list);
// From the environment.
Speedups speedups_from_environment();
// "synthetic-on-device,workspace-cache", or "none".
std::string describe(const Speedups& speedups);

}  // namespace trellis::gpu
