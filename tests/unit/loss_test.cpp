// SPDX-License-Identifier: Apache-2.0
// Softmax cross-entropy: value, label smoothing, gradient and top-k counting.
#include "tests/catch.hpp"

#include <cmath>
#include <vector>

#include "trainer/nn/softmax_cross_entropy.hpp"

using trellis::nn::SoftmaxCrossEntropy;

TEST_CASE("loss of uniform logits is log K, gradient is (p - target) / N") {
    SoftmaxCrossEntropy loss;
    std::vector<float> logits(2 * 4, 0.0f), grad(8);
    std::vector<int> labels{1, 3};
    auto result = loss.evaluate(logits, labels, 4, grad);
    CHECK(result.loss == Approx(std::log(4.0)));
    CHECK(grad[1] == Approx((0.25 - 1) / 2));
    CHECK(grad[0] == Approx(0.25 / 2));
}

TEST_CASE("label smoothing moves mass off the label") {
    SoftmaxCrossEntropy smooth(0.1f);
    std::vector<float> logits{10, 0, 0, 0};
    std::vector<int> labels{0};
    std::vector<float> grad(4);
    auto result = smooth.evaluate(logits, labels, 4, grad);
    // target = 0.925 on the label, 0.025 elsewhere
    double log_sum = std::log(std::exp(10.0) + 3);
    double expected = -(0.925 * (10 - log_sum) + 3 * 0.025 * (0 - log_sum));
    CHECK(result.loss == Approx(expected));
    CHECK(grad[1] == Approx(std::exp(0 - log_sum) - 0.025));
}

TEST_CASE("loss gradient matches finite differences") {
    SoftmaxCrossEntropy loss(0.1f);
    std::vector<float> logits{0.3f, -1.2f, 2.0f, 0.5f, 1.1f, -0.4f, 0.0f, 0.9f};
    std::vector<int> labels{2, 0};
    std::vector<float> grad(8);
    loss.evaluate(logits, labels, 4, grad);
    for (std::size_t i = 0; i < logits.size(); ++i) {
        auto nudged = logits;
        nudged[i] += 1e-3f;
        double plus = loss.evaluate(nudged, labels, 4, {}).loss;
        nudged[i] -= 2e-3f;
        double minus = loss.evaluate(nudged, labels, 4, {}).loss;
        CHECK(grad[i] == Approx((plus - minus) / 2e-3).margin(1e-4));
    }
}

TEST_CASE("top-1 and top-5 hits; a label out of range is refused") {
    SoftmaxCrossEntropy loss;
    std::vector<float> logits(2 * 10);
    for (int k = 0; k < 10; ++k) logits[k] = logits[10 + k] = float(k);  // class 9 scores highest
    std::vector<int> labels{9, 4};
    auto result = loss.evaluate(logits, labels, 10, {});
    CHECK(result.top1_hits == 1);  // only the first
    CHECK(result.top5_hits == 1);  // class 4 is sixth
    std::vector<float> diverged(10, std::nanf(""));
    std::vector<int> label{3};
    CHECK(loss.evaluate(diverged, label, 10, {}).top5_hits == 0);  // NaN scores are misses
    std::vector<float> flat(10, 0.5f);
    auto tied = loss.evaluate(flat, label, 10, {});
    CHECK(tied.top1_hits == 0);  // every class ties with the label: a model that cannot tell
    CHECK(tied.top5_hits == 0);  // the classes apart scores no hit
    std::vector<float> second(10, 0.0f);
    second[3] = 1.0f, second[7] = 1.0f;  // the label ties with one other class for first
    CHECK(loss.evaluate(second, label, 10, {}).top1_hits == 0);
    CHECK(loss.evaluate(second, label, 10, {}).top5_hits == 1);
    std::vector<int> bad{9, 10};
    CHECK_THROWS_WITH(loss.evaluate(logits, bad, 10, {}), Catch::Contains("label 10 outside [0, 10)"));
    CHECK_THROWS(SoftmaxCrossEntropy(1.0f));
}
