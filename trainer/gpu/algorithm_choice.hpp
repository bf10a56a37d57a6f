// SPDX-License-Identifier: Apache-2.0
// Which of cuDNN's benchmarked algorithms a layer keeps, apart from cuDNN's types so that the
// rule is tested without a GPU: the fastest that ran and fits the workspace bound, and with
// --deterministic the fastest deterministic one. Where no deterministic one exists for a
// layer (cuDNN has none for some NHWC bf16/fp16 gradients), the layer takes the fastest
// anyway and the caller warns: a run that stops there helps nobody.
#pragma once

#include <cstddef>
#include <span>

namespace trellis::gpu {

struct BenchmarkedAlgorithm {
    bool ran = false;           // cuDNN's status was success
    std::size_t workspace = 0;  // bytes
    bool deterministic = false;
};

struct AlgorithmChoice {
    int index = -1;  // into the results; -1: none fits the bound
    bool nondeterministic_fallback = false;
};

// `results` sorted fastest first, as cuDNN's Find returns them.
inline AlgorithmChoice choose_algorithm(std::span<const BenchmarkedAlgorithm> results, std::size_t workspace_limit,
                                        bool deterministic) {
    int fastest_fitting = -1;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        if (!r.ran || r.workspace > workspace_limit) continue;
        if (fastest_fitting < 0) fastest_fitting = int(i);
        if (!deterministic || r.deterministic) return {int(i), false};
    }
    return {fastest_fitting, fastest_fitting >= 0};
}

}  // namespace trellis::gpu
