// SPDX-License-Identifier: Apache-2.0
// What the data-pipeline tests share: a temporary folder that cleans up after itself, small
// generated JPEGs, an in-memory dataset, and a thread-safe collector of warnings.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "trainer/data/bytes.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/jpeg.hpp"
#include "trainer/data/warning.hpp"

namespace trellis::test {

class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "trellis-data-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

inline void write_file(const std::string& path, data::ByteView bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

// Smooth colour gradients with a per-seed offset: crops of different places differ, and the
// image survives JPEG compression nearly unchanged.
inline data::RgbImage test_pattern(int width, int height, int seed = 0) {
    data::RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3)};
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            std::uint8_t* pixel = &image.pixels[(std::size_t(y) * width + x) * 3];
            pixel[0] = static_cast<std::uint8_t>((x * 255 / std::max(1, width - 1) + seed * 37) % 256);
            pixel[1] = static_cast<std::uint8_t>((y * 255 / std::max(1, height - 1) + seed * 11) % 256);
            pixel[2] = static_cast<std::uint8_t>((seed * 53) % 256);
        }
    return image;
}

inline data::Bytes test_jpeg(int width, int height, int seed = 0, int quality = 92) {
    data::JpegEncoder encoder;
    return encoder.encode(test_pattern(width, height, seed), quality);
}

// Samples held in memory; label = index unless given, so that tests can tell samples apart.
class MemoryDataset : public data::Dataset {
public:
    explicit MemoryDataset(std::vector<data::EncodedSample> samples, int num_classes,
                           std::chrono::milliseconds delay = {})
        : samples_(std::move(samples)), num_classes_(num_classes), delay_(delay) {}

    // `count` JPEGs of varied sizes, sample i labelled i.
    static std::vector<data::EncodedSample> jpegs(int count) {
        std::vector<data::EncodedSample> samples;
        for (int i = 0; i < count; ++i)
            samples.push_back({test_jpeg(40 + (i % 5) * 8, 32 + (i % 3) * 12, i), i, "memory:" + std::to_string(i)});
        return samples;
    }

    std::size_t size() const override { return samples_.size(); }
    int num_classes() const override { return num_classes_; }
    data::EncodedSample load(std::size_t index) const override {
        if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
        return samples_.at(index);
    }
    std::string describe() const override { return "memory"; }

private:
    std::vector<data::EncodedSample> samples_;
    int num_classes_;
    std::chrono::milliseconds delay_;
};

class WarningLog {
public:
    data::WarningSink sink() {
        return [this](const std::string& line) {
            std::lock_guard lock(mutex_);
            lines_.push_back(line);
        };
    }
    std::vector<std::string> lines() const {
        std::lock_guard lock(mutex_);
        return lines_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

}  // namespace trellis::test
