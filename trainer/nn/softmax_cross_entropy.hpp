// SPDX-License-Identifier: Apache-2.0
// Softmax cross-entropy over the logits, with label smoothing (Szegedy et al.: the target puts
// 1 - s on the label and s/K on every class), and the top-k hits evaluation reports.
#pragma once

#include <span>
#include <vector>

namespace trellis::nn {

struct LossResult {
    double loss = 0;  // mean over the batch
    int top1_hits = 0;
    int top5_hits = 0;
};

class SoftmaxCrossEntropy {
public:
    explicit SoftmaxCrossEntropy(float label_smoothing = 0.0f);

    // logits: batch x classes, row-major. Fills `logits_grad` (same shape) with d(loss)/d(logits)
    // when it is not empty. Throws when a label is outside [0, classes).
    LossResult evaluate(std::span<const float> logits, std::span<const int> labels, int classes,
                        std::span<float> logits_grad) const;

    float smoothing() const { return smoothing_; }

private:
    float smoothing_;
};

}  // namespace trellis::nn
