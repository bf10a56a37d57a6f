// One training step of a trellis model on the CPU, written out for a peer to repeat: the
// parameters and running statistics before the step, a batch (normal pixels, labels i mod K),
// and what the step computed (the loss, every gradient, the running statistics after).
// tests/models/zoo_pytorch.py reads it.
//   usage: zoo_export MODEL IMAGE_SIZE BATCH CLASSES STEP OUT   (writes OUT.json and OUT.bin)
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"

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

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: zoo_export MODEL IMAGE_SIZE BATCH CLASSES STEP OUT\n");
        return 2;
    }
    std::string name = argv[1], out = argv[6];
    int size = std::stoi(argv[2]), batch = std::stoi(argv[3]), classes = std::stoi(argv[4]);
    std::int64_t step = std::stoll(argv[5]);
    const std::uint64_t seed = 11;
    try {
        nn::cpu::CpuBackend backend;
        models::Model model(backend, models::find_architecture(name), {classes}, batch, size, seed);
        auto& store = model.parameters();
        std::vector<float> images(std::size_t(batch) * size * size * 3);
        std::mt19937 random(5);
        std::normal_distribution<float> pixel(0, 1);
        for (auto& v : images) v = pixel(random);
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
