// SPDX-License-Identifier: Apache-2.0
// Every CUDA layer against the CPU backend on the same inputs and weights: the forward
// output, the input gradient and the parameter gradients, in fp32 (plain FMA, TF32 off),
// bf16 and fp16; the ResNets' layers and blocks (with the fused norm join too) and those of
// tf_cnn_benchmarks' other models. Exits 77 (skip) with the reason where no GPU can be used.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "trainer/gpu/accelerator.hpp"
#include "trainer/nn/concat.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/nn/residual_block.hpp"

using namespace trellis;

namespace {

struct Case {
    std::string name;
    tensor::Shape input;
    std::function<nn::LayerPtr(nn::Backend&)> make;
    bool optimizer = false;    // also compare an SGD step on the layer's gradients
    gpu::Speedups speedups{};  // the GPU side's
};

std::vector<float> random_values(std::size_t n, std::mt19937_64& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    return v;
}

// max |a - b| over max(1, max |a|): one figure per tensor, comparable across precisions.
double difference(const std::vector<float>& expected, const std::vector<float>& got) {
    if (expected.size() != got.size()) return INFINITY;
    double worst = 0, scale = 1;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        worst = std::max(worst, double(std::fabs(expected[i] - got[i])));
        scale = std::max(scale, double(std::fabs(expected[i])));
    }
    return worst / scale;
}

struct Side {
    nn::LayerPtr layer;
    nn::ParameterStore store;
    nn::TensorSpec input_spec, output_spec;
};

int failures = 0;

const nn::DropoutDraw dropout_draw{42, 3};

// [1x1 | 1x1 -> (1x3 | 3x1)]: Inception's module E in small.
nn::LayerPtr concat_with_fork(nn::Backend& b) {
    auto column = [](nn::LayerPtr layer) {
        auto c = std::make_unique<nn::Sequential>();
        c->add(std::move(layer));
        return c;
    };
    std::vector<std::unique_ptr<nn::Sequential>> fork;
    fork.push_back(column(b.convolution({"f13", 6, 4, nn::Window::tf_same(1, 3), true})));
    fork.push_back(column(b.convolution({"f31", 6, 4, nn::Window::tf_same(3, 1), true})));
    std::vector<std::unique_ptr<nn::Sequential>> branches;
    branches.push_back(column(b.convolution({"a", 8, 5, nn::Window::tf_same(1, 1), true})));
    branches.push_back(column(b.convolution({"b", 8, 6, nn::Window::tf_same(1, 1), true})));
    branches.back()->add(std::make_unique<nn::Concat>(std::move(fork), b.channel_concat("fork")));
    return std::make_unique<nn::Concat>(std::move(branches), b.channel_concat("module"));
}

// A residual block with a projection shortcut (in != out) or the identity: the main branch's
// last norm is the join's, which the fused-norm-join speed item runs in one cuDNN call.
nn::LayerPtr residual_block(nn::Backend& b, int in, int out) {
    auto main = std::make_unique<nn::Sequential>();
    main->add(b.convolution({"a", in, out, nn::Window::square(3, 1, 1)}));
    main->add(b.batch_norm({"a_bn", out, true, 1}));
    main->add(b.convolution({"b", out, out, nn::Window::square(3, 1, 1)}));
    auto shortcut = std::make_unique<nn::Sequential>();
    if (in != out) {
        shortcut->add(b.convolution({"proj", in, out, nn::Window::square(1, 1, 0)}));
        shortcut->add(b.batch_norm({"proj_bn", out, false, 1}));
    }
    return std::make_unique<nn::ResidualBlock>(std::move(main), std::move(shortcut),
                                               b.normalized_join({"b_bn", out, false, 1}, "join"));
}

gpu::Speedups fused_norm_join() {
    gpu::Speedups speedups;
    speedups.fused_norm_join = true;
    return speedups;
}

void report(const std::string& what, double diff, double tolerance) {
    bool ok = diff <= tolerance;
    std::printf("%s %s: relative difference %.2e (tolerance %.0e)\n", ok ? "ok:  " : "FAIL:", what.c_str(), diff,
                tolerance);
    if (!ok) ++failures;
}

void run_case(const Case& c, const std::string& precision, double tolerance) {
    gpu::AcceleratorOptions options;
    options.precision = trellis::gpu::precisions().parse(precision, "precision");
    options.deterministic = true;  // plain f32 math on both sides
    options.speedups = c.speedups;
    auto gpu = gpu::open_cuda(options);
    nn::cpu::CpuBackend cpu_backend;
    auto& gpu_backend = gpu->backend();

    Side cpu{c.make(cpu_backend), {}, {}, {}}, dev{c.make(gpu_backend), {}, {}, {}};
    bool four_d = c.input.rank() == 4;
    cpu.input_spec = {c.input, nullptr};
    dev.input_spec = four_d ? gpu_backend.nhwc_spec(c.input) : nn::TensorSpec{c.input, nullptr};
    cpu.output_spec = cpu.layer->setup(cpu.input_spec, true);
    dev.output_spec = dev.layer->setup(dev.input_spec, true);
    cpu.layer->collect(cpu.store);
    dev.layer->collect(dev.store);
    cpu.store.allocate();
    dev.store.allocate();
    std::mt19937_64 rng(7);
    cpu.layer->initialize(rng);
    // Batch norm starts at scale 1, shift 0: random values test more.
    auto values = random_values(cpu.store.values().size(), rng);
    std::copy(values.begin(), values.end(), cpu.store.values().begin());
    std::copy(values.begin(), values.end(), dev.store.values().begin());
    std::copy(cpu.store.statistic_values().begin(), cpu.store.statistic_values().end(),
              dev.store.statistic_values().begin());
    gpu->bind(dev.store);

    auto x = random_values(std::size_t(c.input.elements()), rng);
    auto y_cpu = cpu.layer->forward(cpu_backend.from_plain(x, cpu.input_spec), nn::Mode::train);
    auto y_dev = dev.layer->forward(gpu_backend.from_plain(x, dev.input_spec), nn::Mode::train);
    auto label = c.name + " " + precision;
    report(label + " forward", difference(cpu_backend.to_plain(y_cpu), gpu_backend.to_plain(y_dev)), tolerance);

    auto dy = random_values(std::size_t(y_cpu.shape().elements()), rng);
    auto dx_cpu = cpu.layer->backward(cpu_backend.from_plain(dy, cpu.output_spec));
    auto dx_dev = dev.layer->backward(gpu_backend.from_plain(dy, dev.output_spec));
    report(label + " input gradient", difference(cpu_backend.to_plain(dx_cpu), gpu_backend.to_plain(dx_dev)),
           tolerance);
    if (!cpu.store.grads().empty()) {
        gpu->download_grads();
        std::vector<float> expected(cpu.store.grads().begin(), cpu.store.grads().end());
        std::vector<float> got(dev.store.grads().begin(), dev.store.grads().end());
        report(label + " parameter gradients", difference(expected, got), tolerance * 4);
    }
    if (c.optimizer) {
        // Two steps of each optimizer with weight decay: the fused device kernel against the
        // CPU's, from the same weights and gradients.
        gpu->download_values();
        std::vector<float> start(cpu.store.values().begin(), cpu.store.values().end());
        for (const char* kind : {"sgd", "rmsprop", "lars"}) {
            optim::OptimizerConfig config;
            config.kind = optim::optimizer_kinds().parse(kind, "kind");
            config.nesterov = config.kind == optim::OptimizerKind::sgd;
            std::copy(start.begin(), start.end(), cpu.store.values().begin());
            std::copy(start.begin(), start.end(), dev.store.values().begin());
            gpu->upload_values();
            auto host_optimizer = optim::make_optimizer(config, cpu.store);
            auto device_optimizer = gpu->device_optimizer(config, dev.store);
            for (int step = 0; step < 2; ++step) {
                host_optimizer->step(0.5f);
                device_optimizer->step(0.5f);
            }
            gpu->download_values();
            std::vector<float> expected(cpu.store.values().begin(), cpu.store.values().end());
            std::vector<float> got(dev.store.values().begin(), dev.store.values().end());
            report(label + " " + kind + " steps", difference(expected, got), tolerance * 4);
        }
    }
    if (!cpu.store.statistic_values().empty()) {
        // Inference with the running statistics both sides now hold.
        gpu->download_values();
        auto eval_cpu = cpu.layer->forward(cpu_backend.from_plain(x, cpu.input_spec), nn::Mode::eval);
        auto eval_dev = dev.layer->forward(gpu_backend.from_plain(x, dev.input_spec), nn::Mode::eval);
        report(label + " inference", difference(cpu_backend.to_plain(eval_cpu), gpu_backend.to_plain(eval_dev)),
               tolerance);
        std::vector<float> expected(cpu.store.statistic_values().begin(), cpu.store.statistic_values().end());
        std::vector<float> got(dev.store.statistic_values().begin(), dev.store.statistic_values().end());
        report(label + " running statistics", difference(expected, got), tolerance);
    }
    gpu->unbind();  // dev.store goes first
}

// The GPU in `precision`, opened for one case.
std::unique_ptr<gpu::Accelerator> open_gpu(const std::string& precision, gpu::Speedups speedups = {}) {
    gpu::AcceleratorOptions options;
    options.precision = trellis::gpu::precisions().parse(precision, "precision");
    options.speedups = speedups;
    return gpu::open_cuda(options);
}

// y = relu(a + b), its backward, and the shortcut's gradient sum; with the vector-kernels
// speed item, the same through the 16-byte kernels.
void join_case(const std::string& precision, double tolerance, bool vector_kernels = false) {
    gpu::Speedups speedups;
    speedups.vector_kernels = vector_kernels;
    auto gpu = open_gpu(precision, speedups);
    std::string name = vector_kernels ? "residual join (vector kernels) " : "residual join ";
    nn::cpu::CpuBackend cpu_backend;
    auto& gpu_backend = gpu->backend();
    tensor::Shape shape{2, 8, 4, 4};
    auto cpu_join = cpu_backend.residual_join("join"), dev_join = gpu_backend.residual_join("join");
    nn::TensorSpec cpu_spec{shape, nullptr}, dev_spec = gpu_backend.nhwc_spec(shape);
    auto cpu_out = cpu_join->setup(cpu_spec, cpu_spec);
    auto dev_out = dev_join->setup(dev_spec, dev_spec);
    std::mt19937_64 rng(5);
    auto a = random_values(std::size_t(shape.elements()), rng), b = random_values(std::size_t(shape.elements()), rng);
    auto dy = random_values(std::size_t(shape.elements()), rng);
    auto y_cpu =
        cpu_join->forward(cpu_backend.from_plain(a, cpu_spec), cpu_backend.from_plain(b, cpu_spec), nn::Mode::train);
    auto y_dev =
        dev_join->forward(gpu_backend.from_plain(a, dev_spec), gpu_backend.from_plain(b, dev_spec), nn::Mode::train);
    report(name + precision + " forward", difference(cpu_backend.to_plain(y_cpu), gpu_backend.to_plain(y_dev)),
           tolerance);
    auto g_cpu = cpu_join->backward(cpu_backend.from_plain(dy, cpu_out));
    auto g_dev = dev_join->backward(gpu_backend.from_plain(dy, dev_out));
    auto plain_cpu = cpu_backend.to_plain(g_cpu);
    report(name + precision + " backward", difference(plain_cpu, gpu_backend.to_plain(g_dev)), tolerance);
    cpu_join->accumulate(g_cpu, cpu_backend.from_plain(a, cpu_spec));
    dev_join->accumulate(g_dev, gpu_backend.from_plain(a, dev_spec));
    report(name + precision + " accumulate", difference(cpu_backend.to_plain(g_cpu), gpu_backend.to_plain(g_dev)),
           tolerance);
}

// A batch of bytes normalised on the device (the input pipeline's --pixels bytes) against the
// CPU backend's normalisation, both read back as plain NCHW values; twice, as the staging
// buffers alternate.
void pixels_case(const std::string& precision, double tolerance) {
    auto gpu = open_gpu(precision);
    nn::cpu::CpuBackend cpu_backend;
    auto& gpu_backend = gpu->backend();
    tensor::Shape shape{3, 3, 20, 20};
    std::mt19937_64 rng(5);
    for (int round = 0; round < 2; ++round) {
        std::vector<std::uint8_t> bytes(std::size_t(shape.elements()));
        for (auto& value : bytes) value = std::uint8_t(rng() % 256);
        nn::PixelBytes batch{bytes, {1 / 58.4f, 1 / 57.1f, 1 / 57.4f}, {-2.12f, -2.04f, -1.80f}};
        auto expected = cpu_backend.to_plain(cpu_backend.stage_pixels(batch, cpu_backend.nhwc_spec(shape)));
        auto got = gpu_backend.to_plain(gpu_backend.stage_pixels(batch, gpu_backend.nhwc_spec(shape)));
        report("bytes normalised on the device " + precision + " (batch " + std::to_string(round + 1) + ")",
               difference(expected, got), tolerance);
    }
}

// The loss kernel against SoftmaxCrossEntropy::evaluate: value, top-1/top-5 and gradient.
void loss_case() {
    auto gpu = gpu::open_cuda({});
    nn::cpu::CpuBackend cpu_backend;
    std::mt19937_64 rng(11);
    const int rows = 16, classes = 10;
    auto logits = random_values(std::size_t(rows) * classes, rng);
    std::vector<int> labels(rows);
    for (int r = 0; r < rows; ++r) labels[std::size_t(r)] = r % classes;
    nn::SoftmaxCrossEntropy loss(0.1f);
    std::vector<float> expected_grad(logits.size());
    auto expected = loss.evaluate(logits, labels, classes, expected_grad);
    auto& backend = gpu->backend();
    auto device_logits = backend.from_plain(logits, {tensor::Shape{rows, classes}, nullptr});
    auto grad = backend.device_loss()->start(device_logits, labels, rows, loss, true);
    auto got = backend.device_loss()->finish();
    report("softmax cross-entropy loss", std::fabs(expected.loss - got.loss) / expected.loss, 1e-5);
    report("softmax cross-entropy gradient", difference(expected_grad, backend.to_plain(grad)), 1e-5);
    bool hits = expected.top1_hits == got.top1_hits && expected.top5_hits == got.top5_hits;
    std::printf("%s top-1/top-5 hits: CPU %d/%d, GPU %d/%d\n", hits ? "ok:  " : "FAIL:", expected.top1_hits,
                expected.top5_hits, got.top1_hits, got.top5_hits);
    if (!hits) ++failures;
}

}  // namespace

int main() {
    try {
        gpu::open_cuda({});
    } catch (const gpu::GpuUnavailable& e) {
        std::printf("SKIP: no GPU: %s\n", e.what());
        return 77;
    } catch (const gpu::NoCudaBackend& e) {
        std::printf("SKIP: no CUDA backend: %s\n", e.what());
        return 77;
    } catch (const std::exception& e) {
        // A library that does not load is a failure: it must not pass for a machine without a GPU.
        std::printf("FAIL: the GPU cannot be opened: %s\n", e.what());
        return 1;
    }
    std::vector<Case> cases{
        {"convolution 3x3", tensor::Shape{4, 16, 8, 8},
         [](nn::Backend& b) {
             return b.convolution({"conv3", 16, 32, nn::Window::square(3, 1, 1)});
         },
         true},
        {"convolution 7x7 stride 2 (stem)", tensor::Shape{2, 3, 32, 32},
         [](nn::Backend& b) {
             return b.convolution({"conv7", 3, 16, nn::Window::square(7, 2, 3)});
         }},
        {"convolution 1x1 stride 2", tensor::Shape{4, 32, 8, 8},
         [](nn::Backend& b) {
             return b.convolution({"conv1", 32, 64, nn::Window::square(1, 2, 0)});
         }},
        {"batch norm", tensor::Shape{4, 32, 8, 8},
         [](nn::Backend& b) {
             return b.batch_norm({"bn", 32, false, 1});
         }},
        {"batch norm + relu", tensor::Shape{4, 32, 8, 8},
         [](nn::Backend& b) {
             return b.batch_norm({"bnr", 32, true, 1});
         }},
        {"max pool 3 stride 2", tensor::Shape{4, 16, 16, 16},
         [](nn::Backend& b) {
             return b.pooling({"pool", nn::PoolKind::max, nn::Window::square(3, 2, 1)});
         }},
        {"global average pool", tensor::Shape{4, 64, 7, 7},
         [](nn::Backend& b) { return b.global_average_pool("gap"); }},
        {"fully connected", tensor::Shape{8, 64},
         [](nn::Backend& b) {
             return b.linear({"fc", 64, 10});
         },
         true},
        // The layers of tf_cnn_benchmarks' models.
        {"convolution 1x7 SAME with a bias", tensor::Shape{2, 8, 9, 9},
         [](nn::Backend& b) {
             return b.convolution({"c17", 8, 12, nn::Window::tf_same(1, 7), true});
         }},
        {"convolution 3x3 stride 2 VALID with a bias", tensor::Shape{2, 8, 9, 9},
         [](nn::Backend& b) {
             return b.convolution({"c33", 8, 12, nn::Window::tf_valid(3, 3, 2), true});
         }},
        {"convolution 7x7 stride 2 SAME (one more padded after)", tensor::Shape{2, 3, 9, 9},
         [](nn::Backend& b) {
             return b.convolution({"c77", 3, 8, nn::Window::tf_same(7, 7, 2), true});
         }},
        {"max pool 3x3 stride 2 SAME (one more padded after)", tensor::Shape{2, 8, 8, 8},
         [](nn::Backend& b) {
             return b.pooling({"mpool", nn::PoolKind::max, nn::Window::tf_same(3, 3, 2)});
         }},
        {"batch norm without a learnt scale", tensor::Shape{4, 32, 8, 8},
         [](nn::Backend& b) {
             return b.batch_norm({"bns", 32, true, 1, false, 1e-3f, 0.001f});
         }},
        {"average pool 3x3 SAME (padding not counted)", tensor::Shape{4, 16, 9, 9},
         [](nn::Backend& b) {
             return b.pooling({"apool", nn::PoolKind::average, nn::Window::tf_same(3, 3)});
         }},
        {"relu", tensor::Shape{4, 16, 5, 5}, [](nn::Backend& b) { return b.relu("relu"); }},
        {"dropout 0.5 (the CPU's mask)", tensor::Shape{8, 64},
         [](nn::Backend& b) { return b.dropout("dropout0", 0.5f, dropout_draw); }},
        {"fully connected over images", tensor::Shape{2, 8, 3, 3},
         [](nn::Backend& b) {
             return b.linear({"fci", 0, 10});
         }},
        {"concatenation with a fork", tensor::Shape{2, 8, 5, 5}, [](nn::Backend& b) { return concat_with_fork(b); }},
        // The ResNets' block: its last norm then the join, and the two fused (a speed item).
        {"residual block, projection", tensor::Shape{4, 16, 8, 8},
         [](nn::Backend& b) { return residual_block(b, 16, 32); }},
        {"residual block, projection, fused norm join", tensor::Shape{4, 16, 8, 8},
         [](nn::Backend& b) { return residual_block(b, 16, 32); }, false, fused_norm_join()},
        {"residual block, identity, fused norm join", tensor::Shape{4, 32, 8, 8},
         [](nn::Backend& b) { return residual_block(b, 32, 32); }, false, fused_norm_join()},
    };
    // bf16 keeps 8 bits of mantissa, fp16 11: the tolerances follow.
    for (auto [precision, tolerance] : {std::pair{"fp32", 1e-4}, {"fp16", 5e-3}, {"bf16", 3e-2}}) {
        for (const auto& c : cases) {
            try {
                run_case(c, precision, tolerance);
            } catch (const std::exception& e) {
                std::printf("FAIL: %s %s: %s\n", c.name.c_str(), precision, e.what());
                ++failures;
            }
        }
        for (bool vectors : {false, true}) {
            try {
                join_case(precision, tolerance, vectors);
            } catch (const std::exception& e) {
                std::printf("FAIL: residual join%s %s: %s\n", vectors ? " (vector kernels)" : "", precision, e.what());
                ++failures;
            }
        }
        try {
            pixels_case(precision, tolerance);
        } catch (const std::exception& e) {
            std::printf("FAIL: bytes normalised on the device %s: %s\n", precision, e.what());
            ++failures;
        }
    }
    try {
        loss_case();
    } catch (const std::exception& e) {
        std::printf("FAIL: loss: %s\n", e.what());
        ++failures;
    }
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
