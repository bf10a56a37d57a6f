// SPDX-License-Identifier: Apache-2.0
// make_dataset: a small ImageNet-shaped dataset that a small CNN can learn in a few hundred
// steps, written both as a folder tree and as TFRecord shards holding the same JPEGs:
//
//   DIR/folder/{train,val}/class_NNN/class_NNN_IIIII.JPEG
//   DIR/tfrecord/train-SSSSS-of-NNNNN, DIR/tfrecord/validation-SSSSS-of-NNNNN
//
// TFRecord labels are 1..K as in TensorFlow's ImageNet layout. Class c is a colour (hue c/K)
// with stripes at a class-specific angle and frequency; each image gets a random phase
// (shift), frequency jitter (scale), brightness and pixel noise, so that random crops and
// flips still carry the class. The output depends only on the options.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainer/data/example.hpp"
#include "trainer/data/jpeg.hpp"
#include "trainer/data/rng.hpp"
#include "trainer/data/tfrecord.hpp"

namespace {

using namespace trellis::data;
namespace fs = std::filesystem;

struct Options {
    std::string out;
    int classes = 0;
    int train_per_class = 0;
    int val_per_class = 0;
    int size = 0;
    std::uint64_t seed = 1;
    int shards = 2;
};

[[noreturn]] void usage(const std::string& problem) {
    std::fprintf(stderr,
                 "make_dataset: %s\n"
                 "usage: make_dataset --out DIR --classes K --train-per-class N "
                 "--val-per-class M --size S [--seed X] [--shards N]\n",
                 problem.c_str());
    std::exit(2);
}

long long number(const std::string& option, const char* text, long long min) {
    char* end = nullptr;
    long long value = std::strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < min || value > (1ll << 31) - 1)
        usage(option + " " + text + ": expected an integer >= " + std::to_string(min));
    return value;
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string option = argv[i];
        if (i + 1 >= argc) usage(option + " needs a value");
        const char* value = argv[++i];
        if (option == "--out")
            options.out = value;
        else if (option == "--classes")
            options.classes = static_cast<int>(number(option, value, 1));
        else if (option == "--train-per-class")
            options.train_per_class = static_cast<int>(number(option, value, 0));
        else if (option == "--val-per-class")
            options.val_per_class = static_cast<int>(number(option, value, 0));
        else if (option == "--size")
            options.size = static_cast<int>(number(option, value, 8));
        else if (option == "--seed")
            options.seed = static_cast<std::uint64_t>(number(option, value, 0));
        else if (option == "--shards")
            options.shards = static_cast<int>(number(option, value, 1));
        else
            usage("unknown option " + option);
    }
    if (options.out.empty() || options.classes == 0 || options.size == 0)
        usage("--out, --classes and --size are required");
    return options;
}

// The class's colour: hue c/K at fixed saturation and value.
void class_colour(int label, int classes, float rgb[3]) {
    float hue = 6.0f * static_cast<float>(label) / static_cast<float>(classes);
    float saturation = 0.75f, value = 0.85f;
    float chroma = value * saturation;
    float x = chroma * (1 - std::fabs(std::fmod(hue, 2.0f) - 1));
    float r = 0, g = 0, b = 0;
    switch (static_cast<int>(hue) % 6) {
    case 0: r = chroma, g = x; break;
    case 1: r = x, g = chroma; break;
    case 2: g = chroma, b = x; break;
    case 3: g = x, b = chroma; break;
    case 4: r = x, b = chroma; break;
    default: r = chroma, b = x; break;
    }
    float floor = value - chroma;
    rgb[0] = (r + floor) * 255, rgb[1] = (g + floor) * 255, rgb[2] = (b + floor) * 255;
}

RgbImage class_image(int label, int classes, int size, Rng& rng) {
    float colour[3];
    class_colour(label, classes, colour);
    // Angles in [0, pi/2) so that a horizontal flip (angle -> pi - angle) never turns one
    // class's stripes into another's.
    double angle = 1.5707963 * label / classes;
    double cycles = (2 + label % 4) * rng.uniform(0.8, 1.25);  // across the image: "scale"
    double phase = rng.uniform(0, 6.2831853);                  // "shift"
    double brightness = rng.uniform(0.85, 1.15);
    double dx = std::cos(angle), dy = std::sin(angle);
    RgbImage image{size, size, std::vector<std::uint8_t>(std::size_t(size) * size * 3)};
    for (int y = 0; y < size; ++y)
        for (int x = 0; x < size; ++x) {
            double along = (x * dx + y * dy) / size;
            double stripe = 0.5 + 0.5 * std::sin(6.2831853 * cycles * along + phase);
            double shade = brightness * (0.55 + 0.45 * stripe);
            for (int c = 0; c < 3; ++c) {
                double value = colour[c] * shade + 12.0 * rng.normal();
                image.pixels[(std::size_t(y) * size + x) * 3 + c] =
                    static_cast<std::uint8_t>(std::clamp(value, 0.0, 255.0) + 0.5);
            }
        }
    return image;
}

struct Item {
    int label;
    int instance;
    Bytes jpeg;
};

void write_file(const fs::path& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error(path.string() + ": write failed");
}

std::uint64_t write_split(const Options& options, const std::string& folder_split, const std::string& record_split,
                          int per_class, std::uint64_t stream) {
    JpegEncoder encoder;
    std::vector<Item> items;
    std::uint64_t bytes = 0;
    for (int label = 0; label < options.classes; ++label) {
        char name[32];
        std::snprintf(name, sizeof name, "class_%03d", label);
        fs::path folder = fs::path(options.out) / "folder" / folder_split / name;
        fs::create_directories(folder);
        for (int i = 0; i < per_class; ++i) {
            Rng rng(mix_seed({options.seed, stream, static_cast<std::uint64_t>(label), static_cast<std::uint64_t>(i)}));
            Bytes jpeg = encoder.encode(class_image(label, options.classes, options.size, rng), 90);
            char file[48];
            std::snprintf(file, sizeof file, "%s_%05d.JPEG", name, i);
            write_file(folder / file, jpeg);
            bytes += jpeg.size();
            items.push_back({label, i, std::move(jpeg)});
        }
    }
    // TensorFlow's shards hold a shuffled mix of classes.
    Rng order(mix_seed({options.seed, stream, 0x7368756666ull}));
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[order.below(i)]);
    fs::create_directories(fs::path(options.out) / "tfrecord");
    for (int shard = 0; shard < options.shards; ++shard) {
        char name[64];
        std::snprintf(name, sizeof name, "%s-%05d-of-%05d", record_split.c_str(), shard, options.shards);
        TfRecordWriter writer((fs::path(options.out) / "tfrecord" / name).string());
        std::size_t first = items.size() * shard / options.shards;
        std::size_t last = items.size() * (shard + 1) / options.shards;
        for (std::size_t i = first; i < last; ++i)
            writer.write(encode_image_example(items[i].jpeg, items[i].label + 1));
        writer.close();
    }
    return bytes;
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse(argc, argv);
    try {
        auto start = std::chrono::steady_clock::now();
        std::uint64_t train_bytes = write_split(options, "train", "train", options.train_per_class, 1);
        std::uint64_t val_bytes = write_split(options, "val", "validation", options.val_per_class, 2);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf(
            "make_dataset: %s: %d classes, %d train + %d val images of %dx%d "
            "(%.1f + %.1f KiB of JPEG), %d shards per split, %.2f s\n",
            options.out.c_str(), options.classes, options.classes * options.train_per_class,
            options.classes * options.val_per_class, options.size, options.size, train_bytes / 1024.0,
            val_bytes / 1024.0, options.shards, seconds);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "make_dataset: %s\n", error.what());
        return 1;
    }
    return 0;
}
