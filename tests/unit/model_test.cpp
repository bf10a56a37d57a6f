// SPDX-License-Identifier: Apache-2.0
// A training step that adds the gradients of several batches (--accumulate): two parts give
// the mean of the two batches' gradients, each computed on its own, and the gradients a caller
// is told are ready during the last part are already complete.
#include "tests/catch.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"

using namespace trellis;

namespace {

struct Batch {
    std::vector<float> images;
    std::vector<int> labels;
    Batch(int size, unsigned seed) : images(std::size_t(size) * 32 * 32 * 3), labels(std::size_t(size)) {
        std::mt19937 random(seed);
        std::normal_distribution<float> pixel(0, 1);
        for (auto& value : images) value = pixel(random);
        for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = int((i + seed) % 10);
    }
};

}  // namespace

TEST_CASE("two parts give the mean of their batches' gradients, complete when announced") {
    nn::cpu::CpuBackend backend;
    const auto& config = models::find_architecture("resnet8");
    models::Model model(backend, config, {10, false}, 4, 32, 3);
    nn::SoftmaxCrossEntropy loss;
    Batch first(4, 7), second(4, 8);

    auto grads = model.parameters().grads();
    model.train_step(first.images, first.labels, loss);
    std::vector<float> expected(grads.begin(), grads.end());
    auto second_loss = model.train_step(second.images, second.labels, loss).loss;
    for (std::size_t i = 0; i < grads.size(); ++i) expected[i] = (expected[i] + grads[i]) / 2;
    std::size_t moved = 0;  // the batches differ, so their mean differs from the second's
    for (std::size_t i = 0; i < grads.size(); ++i) moved += grads[i] != Approx(expected[i]).margin(1e-6);
    REQUIRE(moved > grads.size() / 2);

    model.train_step(first.images, first.labels, loss, {}, {0, 2});
    std::vector<std::size_t> offsets;
    std::size_t incomplete = 0;
    auto last = model.train_step(second.images, second.labels, loss,
                                 [&](std::size_t offset) {
                                     offsets.push_back(offset);
                                     for (std::size_t i = offset; i < grads.size(); ++i)
                                         incomplete += grads[i] != Approx(expected[i]).margin(1e-6);
                                 },
                                 {1, 2});
    CHECK(last.loss == Approx(second_loss));  // each part reports its own batch (the trainer averages)
    REQUIRE_FALSE(offsets.empty());
    CHECK(std::is_sorted(offsets.rbegin(), offsets.rend()));  // back to front
    CHECK(incomplete == 0);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) differing += grads[i] != Approx(expected[i]).margin(1e-6);
    CHECK(differing == 0);
}

TEST_CASE("ResNet-50 v1 and v1.5: the same parameters, the published multiply-accumulates") {
    nn::cpu::CpuBackend backend;
    const auto& v15 = models::find_architecture("resnet50");
    const auto& v1 = models::find_architecture("resnet50_v1");
    CHECK(v15.form == "ResNet v1.5");
    CHECK(v1.form == "ResNet v1");
    CHECK(models::find_architecture("resnet20").form.empty());
    // 4.09 and 3.86 GMACs at 224x224 with 1000 classes (tf_cnn_benchmarks' and torchvision's figures).
    CHECK(models::Model(backend, v15, {1000}, 1, 224, 1).gmacs_per_image() == Approx(4.09).margin(0.01));
    CHECK(models::Model(backend, v1, {1000}, 1, 224, 1).gmacs_per_image() == Approx(3.86).margin(0.01));
    models::Model a(backend, v15, {10, false}, 1, 64, 1), b(backend, v1, {10, false}, 1, 64, 1);
    CHECK(a.parameters().learned_elements() == b.parameters().learned_elements());
    // Both build and run (the stride moves, the shapes of the outputs do not).
    std::vector<float> image(64 * 64 * 3, 0.1f);
    std::vector<int> label{3};
    nn::SoftmaxCrossEntropy loss;
    CHECK(std::isfinite(a.evaluate(image, label, 1, loss).loss));
    CHECK(std::isfinite(b.evaluate(image, label, 1, loss).loss));
}

TEST_CASE("a residual block's last norm, held by its join, keeps its place among the parameters") {
    // Checkpoints and gradient buckets follow the order of registration: the main branch, its
    // last norm, then the projection shortcut.
    nn::cpu::CpuBackend backend;
    models::Model model(backend, models::find_architecture("resnet8"), {10, true}, 1, 32, 1);
    std::vector<std::string> names;
    for (const auto* p : model.parameters().learned()) names.push_back(p->name);
    auto at = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
    REQUIRE(at("layer2.0.2.bn.weight") < std::ptrdiff_t(names.size()));
    CHECK(at("layer2.0.2.conv.weight") < at("layer2.0.2.bn.weight"));
    CHECK(at("layer2.0.2.bn.weight") < at("layer2.0.downsample.conv.weight"));
    CHECK(at("layer2.0.downsample.bn.bias") < at("layer3.0.1.conv.weight"));
    // --zero-init-residual: gamma 0 for the join's norm only.
    for (const auto* p : model.parameters().learned()) {
        if (p->name == "layer2.0.2.bn.weight") CHECK(p->value[0] == 0.0f);
        if (p->name == "layer2.0.1.bn.weight" || p->name == "layer2.0.downsample.bn.weight") CHECK(p->value[0] == 1.0f);
    }
}

TEST_CASE("a batch of bytes trains as the same pixels normalised into floats") {
    nn::cpu::CpuBackend backend;
    const auto& config = models::find_architecture("resnet8");
    models::Model model(backend, config, {10, false}, 2, 32, 3);
    nn::SoftmaxCrossEntropy loss;
    std::vector<std::uint8_t> bytes(2 * 32 * 32 * 3);
    std::mt19937 random(11);
    for (auto& value : bytes) value = std::uint8_t(random() % 256);
    nn::PixelBytes raw{bytes, {1 / 58.0f, 1 / 57.0f, 1 / 57.5f}, {-2.1f, -2.0f, -1.8f}};
    std::vector<float> floats(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) floats[i] = float(bytes[i]) * raw.gain[i % 3] + raw.bias[i % 3];
    std::vector<int> labels{3, 7};

    auto from_floats = model.train_step(floats, labels, loss);
    auto grads = model.parameters().grads();
    std::vector<float> expected(grads.begin(), grads.end());
    auto from_bytes = model.train_step(raw, labels, loss);
    CHECK(from_bytes.loss == from_floats.loss);
    CHECK(std::equal(grads.begin(), grads.end(), expected.begin()));
    CHECK(model.evaluate(raw, labels, 2, loss).loss == model.evaluate(floats, labels, 2, loss).loss);
    std::vector<std::uint8_t> short_batch(32 * 32 * 3);
    CHECK_THROWS_WITH(model.train_step(nn::PixelBytes{short_batch, raw.gain, raw.bias}, labels, loss),
                      Catch::Contains("holds 3072 values, the model expects 6144"));
}

TEST_CASE("tf_cnn_benchmarks' models: their parameters and multiply-accumulates at 1001 classes") {
    // Millions of parameters and billions of multiply-accumulates per image, counted by hand
    // from each model's layer list in tf_cnn_benchmarks, not by the code under test.
    struct Expected {
        const char* name;
        int image_size;
        double parameters_m, gmacs;
    };
    const Expected models_[] = {{"alexnet", 227, 61.84, 0.84},
                                {"vgg16", 224, 138.36, 15.47},
                                {"googlenet", 224, 7.00, 1.58},
                                {"inception3", 299, 23.82, 5.71},
                                {"inception4", 299, 42.65, 12.25}};
    nn::cpu::CpuBackend backend;
    for (const auto& e : models_) {
        INFO(e.name);
        const auto& architecture = models::find_architecture(e.name);
        CHECK(architecture.default_image_size == e.image_size);
        models::Model model(backend, architecture, {1001}, 1, e.image_size, 1);
        CHECK(double(model.parameters().learned_elements()) / 1e6 == Approx(e.parameters_m).margin(0.005));
        CHECK(model.gmacs_per_image() == Approx(e.gmacs).margin(0.005));
    }
}

TEST_CASE("each model's smallest image fits all its layers, one pixel less is refused by name") {
    nn::cpu::CpuBackend backend;
    for (const char* name : {"alexnet", "vgg16", "googlenet", "inception3", "inception4", "resnet50", "resnet20"}) {
        INFO(name);
        const auto& architecture = models::find_architecture(name);
        int smallest = architecture.minimum_image_size;
        CHECK_NOTHROW(models::Model(backend, architecture, {10}, 1, smallest, 1));
        CHECK_THROWS_WITH(models::Model(backend, architecture, {10}, 1, smallest - 1, 1),
                          Catch::Contains(std::string(name) + " needs images of at least " + std::to_string(smallest)));
        // Below the stated minimum, the layers themselves would refuse.
        auto probe = [&](int size) {
            models::Architecture relaxed = architecture;
            relaxed.minimum_image_size = 1;
            models::Model(backend, relaxed, {10}, 1, size, 1);
        };
        if (std::string(name) != "resnet50" && std::string(name) != "resnet20")
            CHECK_THROWS_WITH(probe(smallest - 1), Catch::Contains("does not fit"));
    }
}
