// SPDX-License-Identifier: Apache-2.0
// Every CPU layer's backward against central finite differences.
#include "tests/catch.hpp"

#include <cmath>

#include "tests/unit/gradient_check.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/nn/cpu/dnnl_context.hpp"
#include "trainer/nn/concat.hpp"
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
    auto conv3 = backend.convolution({"conv3", 4, 8, nn::Window::square(3, 1, 1)});
    expect_gradients_match(*conv3, images(2, 4, 6, 6));
    auto conv3s2 = backend.convolution({"conv3s2", 8, 16, nn::Window::square(3, 2, 1)});
    expect_gradients_match(*conv3s2, images(2, 8, 7, 7));
    auto conv1 = backend.convolution({"conv1", 16, 32, nn::Window::square(1, 2, 0)});
    expect_gradients_match(*conv1, images(2, 16, 4, 4));
    auto stem = backend.convolution({"stem", 3, 16, nn::Window::square(7, 2, 3)});
    expect_gradients_match(*stem, images(2, 3, 12, 12));
}

TEST_CASE("batch norm, plain and with the fused ReLU") {
    auto norm = backend.batch_norm({"bn", 16, false, 1.0f});
    expect_gradients_match(*norm, images(4, 16, 3, 3));
    auto norm_relu = backend.batch_norm({"bn_relu", 16, true, 1.0f});
    expect_gradients_match(*norm_relu, images(4, 16, 3, 3));
}

TEST_CASE("max pooling and global average pooling") {
    auto pool = backend.pooling({"pool", nn::PoolKind::max, nn::Window::square(3, 2, 1)});
    expect_gradients_match(*pool, images(2, 16, 8, 8));
    auto average = backend.global_average_pool("avg");
    expect_gradients_match(*average, images(2, 16, 4, 4));
}

TEST_CASE("fully connected layer") {
    auto fc = backend.linear({"fc", 20, 10});
    expect_gradients_match(*fc, {tensor::Shape{3, 20}, nullptr});
}

TEST_CASE("convolution with a bias, rectangular kernels and TensorFlow's SAME and VALID padding") {
    // 7x7 stride 2 SAME on 9x9 pads 2 before and 3 after (GoogLeNet's stem on an odd size).
    auto same = backend.convolution({"same", 3, 8, nn::Window::tf_same(7, 7, 2), true});
    expect_gradients_match(*same, images(2, 3, 9, 9));
    auto wide = backend.convolution({"1x7", 4, 6, nn::Window::tf_same(1, 7), true});
    expect_gradients_match(*wide, images(2, 4, 5, 8));
    auto tall = backend.convolution({"3x1", 4, 6, nn::Window::tf_same(3, 1), false});
    expect_gradients_match(*tall, images(2, 4, 6, 5));
    auto valid = backend.convolution({"valid", 4, 6, nn::Window::tf_valid(3, 3, 2), true});
    expect_gradients_match(*valid, images(2, 4, 7, 7));
}

TEST_CASE("TensorFlow's SAME padding: as much as keeps ceil(size / stride) outputs, the odd pixel after") {
    auto w = nn::Window::tf_same(7, 7, 2).resolved(224, 224);
    CHECK(w.padding == nn::Padding{2, 2, 3, 3});
    CHECK(nn::Window::tf_same(3, 3, 2).resolved(112, 112).padding == nn::Padding{0, 0, 1, 1});
    CHECK(nn::Window::tf_same(1, 7).resolved(17, 17).padding == nn::Padding{0, 3, 0, 3});
    CHECK(nn::Window::tf_same(3, 3, 2).output_shape(tensor::Shape{1, 4, 7, 7}, 4, "p") == tensor::Shape{1, 4, 4, 4});
    CHECK_THROWS_WITH(nn::Window::tf_valid(8, 8).output_shape(tensor::Shape{1, 4, 7, 7}, 4, "apool0"),
                      Catch::Contains("apool0: a 8x8 window does not fit a 7x7 input"));
}

TEST_CASE("batch norm without a learnt scale, with its own epsilon and momentum") {
    auto norm = backend.batch_norm({"bn", 8, true, 1.0f, false, 1e-3f, 0.001f});
    expect_gradients_match(*norm, images(4, 8, 3, 3));
    nn::ParameterStore store;
    norm->setup(images(4, 8, 3, 3), true);
    norm->collect(store);
    REQUIRE(store.learned().size() == 1);  // beta only
    CHECK(store.learned()[0]->name == "bn.bias");
}

TEST_CASE("max and average pooling with SAME padding, the average leaving the padding out") {
    auto max = backend.pooling({"mpool", nn::PoolKind::max, nn::Window::tf_same(3, 3, 2)});
    expect_gradients_match(*max, images(2, 8, 6, 6));
    auto average = backend.pooling({"apool", nn::PoolKind::average, nn::Window::tf_same(3, 3, 1)});
    expect_gradients_match(*average, images(2, 8, 5, 5));
    // A corner output averages the 4 pixels inside the image, not 9 with zeros.
    average->setup(images(1, 1, 3, 3), false);
    std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
    auto y = backend.to_plain(average->forward(backend.from_plain(x, images(1, 1, 3, 3)), nn::Mode::eval));
    CHECK(y[0] == Approx((1 + 2 + 4 + 5) / 4.0));
    CHECK(y[4] == Approx(5));
}

TEST_CASE("ReLU on its own, and a fully connected layer over images (flattened N x C x H x W)") {
    auto relu = backend.relu("relu");
    expect_gradients_match(*relu, images(2, 4, 3, 3));
    auto fc = backend.linear({"fc", 0, 7});  // the features from the input: 4 x 3 x 3
    expect_gradients_match(*fc, images(2, 4, 3, 3));
    nn::ParameterStore store;
    fc->collect(store);
    CHECK(store.learned()[0]->shape == tensor::Shape{7, 36});
    auto wrong = backend.linear({"fc2", 35, 7});
    CHECK_THROWS_WITH(wrong->setup(images(2, 4, 3, 3), true), Catch::Contains("fc2: expects N x 35 input"));
}

TEST_CASE("dropout: its gradient, and masks that depend on the draw and the layer only") {
    nn::DropoutDraw draw{42, 3};
    auto dropout = backend.dropout("dropout0", 0.5f, draw);
    expect_gradients_match(*dropout, {tensor::Shape{4, 64}, nullptr});
    nn::TensorSpec spec{tensor::Shape{4, 256}, nullptr};
    std::vector<float> ones(4 * 256, 1.0f);
    auto run = [&](nn::Layer& layer) {
        layer.setup(spec, true);
        return backend.to_plain(layer.forward(backend.from_plain(ones, spec), nn::Mode::train));
    };
    auto first = run(*dropout);
    int kept = 0;
    for (float v : first) {
        CHECK((v == 0.0f || v == 2.0f));  // kept values are scaled by 1/keep
        kept += v != 0.0f;
    }
    CHECK(kept > 1024 * 0.4);
    CHECK(kept < 1024 * 0.6);
    CHECK(run(*dropout) == first);  // the same draw: the same mask
    auto again = backend.dropout("dropout0", 0.5f, draw);
    CHECK(run(*again) == first);  // another layer object, same name and draw (a resumed run)
    draw.draw = 4;
    CHECK(run(*dropout) != first);
    draw.draw = 3;
    auto other = backend.dropout("dropout1", 0.5f, draw);
    CHECK(run(*other) != first);
    CHECK(backend.to_plain(dropout->forward(backend.from_plain(ones, spec), nn::Mode::eval)) == ones);
}

TEST_CASE("concatenated branches, one of them forking into two") {
    auto branch = [](std::initializer_list<nn::LayerPtr*> layers) {
        auto column = std::make_unique<nn::Sequential>();
        for (auto* layer : layers) column->add(std::move(*layer));
        return column;
    };
    nn::LayerPtr a = backend.convolution({"a", 6, 5, nn::Window::tf_same(1, 1), true});
    nn::LayerPtr b = backend.convolution({"b", 6, 3, nn::Window::tf_same(1, 1), true});
    nn::LayerPtr b1 = backend.convolution({"b1", 3, 4, nn::Window::tf_same(1, 3), true});
    nn::LayerPtr b2 = backend.convolution({"b2", 3, 2, nn::Window::tf_same(3, 1), true});
    nn::LayerPtr pool = backend.pooling({"pool", nn::PoolKind::average, nn::Window::tf_same(3, 3)});
    std::vector<std::unique_ptr<nn::Sequential>> fork;
    fork.push_back(branch({&b1}));
    fork.push_back(branch({&b2}));
    nn::LayerPtr forked = std::make_unique<nn::Concat>(std::move(fork), backend.channel_concat("fork"));
    std::vector<std::unique_ptr<nn::Sequential>> columns;
    columns.push_back(branch({&a}));
    columns.push_back(branch({&b, &forked}));
    columns.push_back(branch({&pool}));
    nn::Concat module(std::move(columns), backend.channel_concat("module"));
    auto out = module.setup(images(2, 6, 5, 5), true);
    CHECK(out.shape == tensor::Shape{2, 5 + 4 + 2 + 6, 5, 5});
    expect_gradients_match(module, images(2, 6, 5, 5), 20);
}

TEST_CASE("residual block with projection shortcut and with identity") {
    auto block = [](int in, int out, int stride) {
        auto main = std::make_unique<nn::Sequential>();
        main->add(backend.convolution({"a", in, out, nn::Window::square(3, stride, 1)}));
        main->add(backend.batch_norm({"a_bn", out, true, 1.0f}));
        main->add(backend.convolution({"b", out, out, nn::Window::square(3, 1, 1)}));
        auto shortcut = std::make_unique<nn::Sequential>();
        if (stride != 1 || in != out) {
            shortcut->add(backend.convolution({"proj", in, out, nn::Window::square(1, stride, 0)}));
            shortcut->add(backend.batch_norm({"proj_bn", out, false, 1.0f}));
        }
        // The main branch's last norm is the join's.
        return nn::ResidualBlock(std::move(main), std::move(shortcut),
                                 backend.normalized_join({"b_bn", out, false, 1.0f}, "join"));
    };
    auto projection = block(8, 16, 2);
    expect_gradients_match(projection, images(2, 8, 6, 6));
    auto identity = block(16, 16, 1);
    expect_gradients_match(identity, images(2, 16, 4, 4));
}

TEST_CASE("batch norm keeps running statistics in training and uses them in evaluation") {
    auto norm = backend.batch_norm({"bn", 2, false, 1.0f});
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

TEST_CASE("batch norm statistics are float32's rounding of the exact ones, in every layout oneDNN gives") {
    // 2 images of 149x149, as inception4's first layer: 44402 values a channel, around 10 with
    // a spread of 1. A float32 sum of them loses about sqrt(44402) ulps of the mean (2.5e-6
    // relative, oneDNN's own statistics); rounded once it is within 2^-24, and the running
    // mean (momentum m: m * mean, rounded again) within 2 * 2^-24 of m times the exact mean.
    const std::int64_t n = 2, channels = 16, size = 149;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> noise(-1.7f, 1.7f);
    std::vector<float> x(std::size_t(n * channels * size * size));
    for (auto& v : x) v = 10.0f + noise(rng);
    const double count = double(n * size * size);
    using tag = dnnl::memory::format_tag;
    for (auto layout : {tag::nchw, tag::nhwc, tag::nChw8c, tag::nChw16c}) {
        INFO("layout " << int(layout));
        auto norm = backend.batch_norm({"bn", int(channels), false, 1.0f});
        tensor::Shape shape{n, channels, size, size};
        auto spec = nn::cpu::spec_of(
            dnnl::memory::desc({n, channels, size, size}, dnnl::memory::data_type::f32, layout), shape);
        norm->setup(spec, true);
        nn::ParameterStore store;
        norm->collect(store);
        store.allocate();
        norm->initialize(rng);
        norm->forward(backend.from_plain(x, spec), nn::Mode::train);
        const auto& stats = store.statistics();
        double worst_mean = 0, worst_variance = 0;
        for (std::int64_t c = 0; c < channels; ++c) {
            double sum = 0, squares = 0;
            for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t p = 0; p < size * size; ++p)
                    sum += x[std::size_t((i * channels + c) * size * size + p)];
            double mean = sum / count;
            for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t p = 0; p < size * size; ++p) {
                    double d = x[std::size_t((i * channels + c) * size * size + p)] - mean;
                    squares += d * d;
                }
            double running_mean = double(0.1f) * mean;
            double running_variance = double(0.9f) + double(0.1f) * squares / (count - 1);
            worst_mean = std::max(worst_mean, std::abs(stats[0]->value[c] - running_mean) / running_mean);
            worst_variance =
                std::max(worst_variance, std::abs(stats[1]->value[c] - running_variance) / running_variance);
        }
        CHECK(worst_mean <= 2 * 0x1p-24);
        // 0.9 + 0.1 variance: four roundings of a value near 1.
        CHECK(worst_variance <= 4 * 0x1p-24);
    }
}

TEST_CASE("tf_cnn_benchmarks' initialisation: a normal with variance gain / fan-in, cut at two deviations") {
    auto conv = backend.convolution({"conv0", 64, 32, nn::Window::tf_same(3, 3), true, {1.0f}});
    conv->setup(images(1, 64, 4, 4), true);
    nn::ParameterStore store;
    conv->collect(store);
    store.allocate();
    std::mt19937_64 rng(3);
    for (auto* p : store.learned()) std::fill(p->value, p->value + p->elements(), 9.0f);
    conv->initialize(rng);
    const auto& weight = *store.learned()[0];
    double deviation = std::sqrt(1.0 / (64 * 9)), sum = 0, squares = 0, largest = 0;
    for (std::int64_t i = 0; i < weight.elements(); ++i) {
        sum += weight.value[i], squares += double(weight.value[i]) * weight.value[i];
        largest = std::max(largest, double(std::abs(weight.value[i])));
    }
    double n = double(weight.elements()), measured = std::sqrt(squares / n - (sum / n) * (sum / n));
    CHECK(measured / deviation == Approx(0.88).margin(0.03));  // a normal cut at 2 sigma keeps 0.88 of its deviation
    CHECK(largest <= 2 * deviation);
    const auto& bias = *store.learned()[1];
    CHECK(std::all_of(bias.value, bias.value + bias.elements(), [](float b) { return b == 0.0f; }));
}
