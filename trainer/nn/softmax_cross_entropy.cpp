// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/softmax_cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace trellis::nn {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(float label_smoothing) : smoothing_(label_smoothing) {
    if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
        throw UsageError("label smoothing must be in [0, 1), got " + std::to_string(label_smoothing));
}

LossResult SoftmaxCrossEntropy::evaluate(std::span<const float> logits, std::span<const int> labels, int classes,
                                         std::span<float> logits_grad) const {
    const auto batch = static_cast<int>(labels.size());
    LossResult result;
    std::vector<double> probability(classes);
    const double off_target = smoothing_ / classes, on_target = 1.0 - smoothing_ + off_target;
    for (int n = 0; n < batch; ++n) {
        const float* row = logits.data() + std::size_t(n) * classes;
        int label = labels[n];
        if (label < 0 || label >= classes)
            throw std::out_of_range("label " + std::to_string(label) + " outside [0, " + std::to_string(classes) + ")");
        // Shift by the maximum so that exp never overflows.
        double top = *std::max_element(row, row + classes), sum = 0;
        for (int k = 0; k < classes; ++k) sum += probability[k] = std::exp(double(row[k]) - top);
        double log_sum = std::log(sum), loss = 0;
        for (int k = 0; k < classes; ++k) {
            double target = k == label ? on_target : off_target;
            loss -= target * (double(row[k]) - top - log_sum);
            probability[k] /= sum;
            if (!logits_grad.empty())
                logits_grad[std::size_t(n) * classes + k] = float((probability[k] - target) / batch);
        }
        result.loss += loss / batch;

        // Other classes scoring at least as high as the label: a tie is not a hit (a model that
        // scores every class alike must not look perfect), and neither is a non-finite score.
        int higher = std::isfinite(row[label]) ? 0 : classes;
        for (int k = 0; k < classes; ++k) higher += k != label && (row[k] >= row[label] || !std::isfinite(row[k]));
        result.top1_hits += higher < 1;
        result.top5_hits += higher < 5;
    }
    return result;
}

}  // namespace trellis::nn
