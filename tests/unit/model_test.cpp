// A training step that adds the gradients of several batches (--accumulate): two parts of the
// same batch give that batch's gradients, and the gradients a caller is told are ready during
// the last part are already complete.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"

using namespace trellis;

namespace {

struct Batch {
    std::vector<float> images;
    std::vector<int> labels;
    explicit Batch(int size) : images(std::size_t(size) * 32 * 32 * 3), labels(std::size_t(size)) {
        std::mt19937 random(7);
        std::normal_distribution<float> pixel(0, 1);
        for (auto& value : images) value = pixel(random);
        for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = int(i % 10);
    }
};

}  // namespace

TEST_CASE("two parts of the same batch give the batch's gradients, complete when announced") {
    nn::cpu::CpuBackend backend;
    const auto& config = models::find_resnet("resnet8");
    models::Model model(backend, config, {10, false}, 4, 32, 3);
    nn::SoftmaxCrossEntropy loss;
    Batch batch(4);

    auto whole = model.train_step(batch.images, batch.labels, loss);
    auto grads = model.parameters().grads();
    std::vector<float> expected(grads.begin(), grads.end());

    model.train_step(batch.images, batch.labels, loss, {}, {0, 2});
    std::vector<std::size_t> offsets;
    std::size_t incomplete = 0;
    auto last = model.train_step(batch.images, batch.labels, loss,
                                 [&](std::size_t offset) {
                                     offsets.push_back(offset);
                                     for (std::size_t i = offset; i < grads.size(); ++i)
                                         incomplete += grads[i] != Approx(expected[i]).margin(1e-6);
                                 },
                                 {1, 2});
    CHECK(last.loss == Approx(whole.loss));
    REQUIRE_FALSE(offsets.empty());
    CHECK(std::is_sorted(offsets.rbegin(), offsets.rend()));  // back to front
    CHECK(incomplete == 0);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) differing += grads[i] != Approx(expected[i]).margin(1e-6);
    CHECK(differing == 0);
}
