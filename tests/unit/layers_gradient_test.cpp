// Every CPU layer's backward against central finite differences.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/unit/gradient_check.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/nn/residual_block.hpp"

using namespace trellis;

namespace {

nn::cpu::CpuBackend backend;

nn::TensorSpec images(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return {tensor::Shape{n, c, h, w}, nullptr};
}

void expect_gradients_match(nn::Layer& layer, nn::TensorSpec input, int samples = 12) {
    test::GradientCheck check(backend, layer, std::move(input));
    auto result = check.run(samples);
    INFO("worst: " << result.worst_where << "; skipped " << result.skipped);
    CHECK(result.checked >= result.skipped * 4);
    CHECK(result.worst_error < 1e-2);
}

}  // namespace

TEST_CASE("convolution 3x3 stride 1 and 2, 1x1 and 7x7") {
    auto conv3 = backend.convolution({"conv3", 4, 8, 3, 1, 1});
    expect_gradients_match(*conv3, images(2, 4, 6, 6));
    auto conv3s2 = backend.convolution({"conv3s2", 8, 16, 3, 2, 1});
    expect_gradients_match(*conv3s2, images(2, 8, 7, 7));
    auto conv1 = backend.convolution({"conv1", 16, 32, 1, 2, 0});
    expect_gradients_match(*conv1, images(2, 16, 4, 4));
    auto stem = backend.convolution({"stem", 3, 16, 7, 2, 3});
    expect_gradients_match(*stem, images(2, 3, 12, 12));
}

TEST_CASE("batch norm, plain and with the fused ReLU") {
    auto norm = backend.batch_norm("bn", 16, false, 1.0f);
    expect_gradients_match(*norm, images(4, 16, 3, 3));
    auto norm_relu = backend.batch_norm("bn_relu", 16, true, 1.0f);
    expect_gradients_match(*norm_relu, images(4, 16, 3, 3));
}

TEST_CASE("max pooling and global average pooling") {
    auto pool = backend.max_pool("pool", 3, 2, 1);
    expect_gradients_match(*pool, images(2, 16, 8, 8));
    auto average = backend.global_average_pool("avg");
    expect_gradients_match(*average, images(2, 16, 4, 4));
}

TEST_CASE("fully connected layer") {
    auto fc = backend.linear("fc", 20, 10);
    expect_gradients_match(*fc, {tensor::Shape{3, 20}, nullptr});
}

TEST_CASE("residual block with projection shortcut and with identity") {
    auto block = [](int in, int out, int stride) {
        auto main = std::make_unique<nn::Sequential>();
        main->add(backend.convolution({"a", in, out, 3, stride, 1}));
        main->add(backend.batch_norm("a_bn", out, true, 1.0f));
        main->add(backend.convolution({"b", out, out, 3, 1, 1}));
        main->add(backend.batch_norm("b_bn", out, false, 1.0f));
        auto shortcut = std::make_unique<nn::Sequential>();
        if (stride != 1 || in != out) {
            shortcut->add(backend.convolution({"proj", in, out, 1, stride, 0}));
            shortcut->add(backend.batch_norm("proj_bn", out, false, 1.0f));
        }
        return nn::ResidualBlock(std::move(main), std::move(shortcut), backend.residual_join("join"));
    };
    auto projection = block(8, 16, 2);
    expect_gradients_match(projection, images(2, 8, 6, 6));
    auto identity = block(16, 16, 1);
    expect_gradients_match(identity, images(2, 16, 4, 4));
}

TEST_CASE("batch norm keeps running statistics in training and uses them in evaluation") {
    auto norm = backend.batch_norm("bn", 2, false, 1.0f);
    nn::TensorSpec spec = images(2, 2, 1, 2);
    norm->setup(spec, true);
    nn::ParameterStore store;
    norm->collect(store);
    store.allocate();
    std::mt19937_64 rng(1);
    norm->initialize(rng);
    // Channel 0 holds {1, 2, 5, 6}: mean 3.5, biased variance 4.25, unbiased 17/3.
    std::vector<float> x{1, 2, 0, 0, 5, 6, 0, 0};
    norm->forward(backend.from_plain(x, spec), nn::Mode::train);
    const auto& stats = store.statistics();
    REQUIRE(stats.size() == 2);
    CHECK(stats[0]->value[0] == Approx(0.1 * 3.5));
    CHECK(stats[1]->value[0] == Approx(0.9 + 0.1 * 17.0 / 3.0));
    auto y = backend.to_plain(norm->forward(backend.from_plain(x, spec), nn::Mode::eval));
    double mean = stats[0]->value[0], variance = stats[1]->value[0];
    CHECK(y[0] == Approx((1 - mean) / std::sqrt(variance + 1e-5)));
}
