// SPDX-License-Identifier: Apache-2.0
// Training steps of a trellis model on the CPU, written out for a peer to repeat. One step (at
// dropout draw STEP): the parameters and running statistics before it, a batch (normal pixels,
// labels i mod K), and what it computed (the loss, every gradient, the running statistics
// after); tests/models/zoo_pytorch.py reads it. With STEPS and LR: the parameters and running
// statistics before, STEPS batches trained with SGD (momentum 0.9, weight decay 1e-4 on weights,
// learning rate LR) and one more evaluated with the running statistics, each step's loss, the
// evaluation's loss and hits, and the parameters and running statistics after;
// tests/models/resnet_steps_pytorch.py reads that.
//   usage: zoo_export MODEL IMAGE_SIZE BATCH CLASSES STEP OUT [STEPS LR]  (writes OUT.json, OUT.bin)
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/optim/optimizer.hpp"

using namespace trellis;

namespace {

void write(std::ofstream& out, std::span<const float> values) {
    out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
}

nlohmann::json describe(const std::vector<nn::Parameter*>& parameters) {
    auto list = nlohmann::json::array();
    for (const auto* p : parameters) {
        auto shape = nlohmann::json::array();
        for (std::size_t i = 0; i < p->shape.rank(); ++i) shape.push_back(p->shape[i]);
        list.push_back({{"name", p->name}, {"shape", shape}});
    }
    return list;
}

const std::uint64_t seed = 11;

std::vector<float> normal_pixels(std::mt19937& random, std::size_t count) {
    std::normal_distribution<float> pixel(0, 1);
    std::vector<float> images(count);
    for (auto& v : images) v = pixel(random);
    return images;
}

int export_steps(const std::string& name, int size, int batch, int classes, int steps, float lr,
                 const std::string& out) {
    nn::cpu::CpuBackend backend;
    models::Model model(backend, models::find_architecture(name), {classes}, batch, size, seed);
    auto& store = model.parameters();
    auto optimizer = optim::make_optimizer({}, store);
    std::mt19937 random(5);
    std::ofstream bin(out + ".bin", std::ios::binary);
    write(bin, store.values());
    write(bin, store.statistic_values());
    nn::SoftmaxCrossEntropy loss;
    std::vector<int> labels;
    for (int i = 0; i < batch; ++i) labels.push_back((i * 7) % classes);
    // Each class its own pattern under the noise: the steps learn, so that their gradients are
    // the data's and not rounding's, and the runs stay close enough to compare after several.
    const std::size_t pixels = std::size_t(size) * size * 3;
    auto patterns = normal_pixels(random, pixels * classes);
    auto learnable_batch = [&] {
        auto images = normal_pixels(random, pixels * batch);
        for (int i = 0; i < batch; ++i)
            for (std::size_t j = 0; j < pixels; ++j)
                images[i * pixels + j] = patterns[labels[i] * pixels + j] + 0.5f * images[i * pixels + j];
        return images;
    };
    auto losses = nlohmann::json::array();
    for (int step = 0; step < steps; ++step) {
        auto images = learnable_batch();
        write(bin, images);
        losses.push_back(model.train_step(images, labels, loss, {}, {0, 1, step}).loss);
        optimizer->step(lr);
    }
    auto images = learnable_batch();
    write(bin, images);
    auto scored = model.evaluate(images, labels, batch, loss);
    write(bin, store.values());
    write(bin, store.statistic_values());
    nlohmann::json meta{{"model", name},
                        {"image_size", size},
                        {"batch", batch},
                        {"classes", classes},
                        {"labels", labels},
                        {"steps", steps},
                        {"lr", lr},
                        {"losses", losses},
                        {"eval_loss", scored.loss},
                        {"eval_top1_hits", scored.top1_hits},
                        {"parameters", describe(store.learned())},
                        {"statistics", describe(store.statistics())}};
    std::ofstream(out + ".json") << meta.dump(1) << "\n";
    std::printf("%s: %d steps at batch %d, last loss %.6f, evaluation loss %.6f\n", name.c_str(), steps, batch,
                losses.back().get<double>(), scored.loss);
    return bin.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7 && argc != 9) {
        std::fprintf(stderr, "usage: zoo_export MODEL IMAGE_SIZE BATCH CLASSES STEP OUT [STEPS LR]\n");
        return 2;
    }
    std::string name = argv[1], out = argv[6];
    int size = std::stoi(argv[2]), batch = std::stoi(argv[3]), classes = std::stoi(argv[4]);
    std::int64_t step = std::stoll(argv[5]);
    try {
        if (argc == 9) return export_steps(name, size, batch, classes, std::stoi(argv[7]), std::stof(argv[8]), out);
        nn::cpu::CpuBackend backend;
        models::Model model(backend, models::find_architecture(name), {classes}, batch, size, seed);
        auto& store = model.parameters();
        std::mt19937 random(5);
        auto images = normal_pixels(random, std::size_t(batch) * size * size * 3);
        std::vector<int> labels;
        for (int i = 0; i < batch; ++i) labels.push_back(i % classes);

        std::ofstream bin(out + ".bin", std::ios::binary);
        write(bin, images);
        write(bin, store.values());
        write(bin, store.statistic_values());
        nn::SoftmaxCrossEntropy loss;
        auto result = model.train_step(images, labels, loss, {}, {0, 1, step});
        write(bin, store.grads());
        write(bin, store.statistic_values());

        nlohmann::json meta{{"model", name},
                            {"image_size", size},
                            {"batch", batch},
                            {"classes", classes},
                            {"labels", labels},
                            {"loss", result.loss},
                            {"dropout_seed", seed},
                            {"dropout_draw", step},
                            {"parameters", describe(store.learned())},
                            {"statistics", describe(store.statistics())}};
        std::ofstream(out + ".json") << meta.dump(1) << "\n";
        std::printf("%s: %zu parameter tensors, loss %.6f\n", name.c_str(), store.learned().size(), result.loss);
        return bin.good() ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "zoo_export: %s\n", e.what());
        return 1;
    }
}
