// SPDX-License-Identifier: Apache-2.0
#include "trainer/checkpoint/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "trainer/data/crc32c.hpp"

namespace fs = std::filesystem;

namespace trellis::checkpoint {

namespace {

constexpr std::string_view magic = "TRELLIS-CHECKPOINT 1\n";

struct NamedArray {
    std::string name;
    std::span<float> values;
};

std::vector<NamedArray> arrays_of(nn::ParameterStore& parameters, optim::Optimizer& optimizer) {
    std::vector<NamedArray> arrays{{"parameters", parameters.values()}, {"statistics", parameters.statistic_values()}};
    for (auto& slot : optimizer.state()) arrays.push_back({"optimizer." + slot.name, *slot.values});
    return arrays;
}

void append(std::vector<std::uint8_t>& out, const void* data, std::size_t size) {
    auto* bytes = static_cast<const std::uint8_t*>(data);
    out.insert(out.end(), bytes, bytes + size);
}

void write_fully(int fd, const std::vector<std::uint8_t>& bytes, const std::string& path) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw CheckpointError(path + ": write failed: " + std::strerror(errno));
        done += std::size_t(n);
    }
}

void sync_folder(const std::string& folder) {
    int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

std::int64_t step_of(const fs::path& file) {
    auto name = file.filename().string();
    const std::string prefix = "checkpoint-", suffix = ".trellis";
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return -1;
    auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    std::int64_t step = -1;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (error != std::errc() || end != digits.data() + digits.size()) return -1;
    return step;
}

// Newest first.
std::vector<fs::path> checkpoints_in(const std::string& folder) {
    std::vector<fs::path> files;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(folder, error))
        if (step_of(entry.path()) >= 0) files.push_back(entry.path());
    std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return step_of(a) > step_of(b); });
    return files;
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CheckpointError(path.string() + ": cannot open: " + std::strerror(errno));
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void check(bool ok, const fs::path& path, const std::string& what) {
    if (!ok) throw CheckpointError(path.string() + ": " + what);
}

// A readable checkpoint of something else is the user's mistake, not damage: an error.
CheckpointInfo restore(const fs::path& path, const nlohmann::json& header, const std::vector<std::uint8_t>& bytes,
                       std::size_t payload, const CheckpointInfo& expected, nn::ParameterStore& parameters,
                       optim::Optimizer& optimizer) {
    check(header.is_object(), path, "the header is not a JSON object");
    auto mismatch = [&](const char* key, const std::string& theirs, const std::string& ours) {
        if (theirs != ours)
            throw CheckpointError(path.string() + ": " + key + " is " + theirs + ", this run has " + ours);
    };
    mismatch("model", header.value("model", ""), expected.model);
    mismatch("num_classes", std::to_string(header.value("num_classes", 0)), std::to_string(expected.num_classes));
    mismatch("optimizer", header.value("optimizer", ""), expected.optimizer);
    // The data position means other samples under another global batch or seed.
    if (auto saved = header.value("global_batch", 0); saved != expected.global_batch)
        throw GlobalBatchMismatch(path.string() + ": global batch is " + std::to_string(saved) + ", this run has " +
                                      std::to_string(expected.global_batch),
                                  saved);
    mismatch("seed", std::to_string(header.value("seed", std::uint64_t(0))), std::to_string(expected.seed));

    auto arrays = arrays_of(parameters, optimizer);
    const auto& listed = header.at("arrays");
    check(listed.is_array() && listed.size() == arrays.size(), path,
          "holds " + std::to_string(listed.size()) + " arrays, expected " + std::to_string(arrays.size()));
    std::size_t offset = payload;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
        auto count = listed[i].at("count").get<std::size_t>();
        check(listed[i].at("name") == arrays[i].name && count == arrays[i].values.size(), path,
              "array " + arrays[i].name + " has " + std::to_string(count) + " values, expected " +
                  std::to_string(arrays[i].values.size()));
        check(count * 4 <= bytes.size() - 4 - offset, path, "array " + arrays[i].name + " runs past the end");
        std::memcpy(arrays[i].values.data(), bytes.data() + offset, count * 4);
        offset += count * 4;
    }
    CheckpointInfo info = expected;
    info.step = header.at("step").get<std::int64_t>();
    info.next = {header.at("epoch").get<std::int64_t>(), header.at("batch").get<std::int64_t>()};
    info.batch_samples = header.value("batch_samples", std::int64_t(0));
    info.schedule = header.value("schedule", "");
    info.loss_scale = header.value("loss_scale", 0.0f);
    info.loss_scale_steps = header.value("loss_scale_steps", std::int64_t(0));
    info.train_seconds = header.value("train_seconds", -1.0);
    info.segment = header.value("segment", 0);
    info.levels.clear();
    for (const auto& level : header.value("levels", nlohmann::json::array()))
        info.levels.push_back({level.at("metric").get<std::string>(), level.at("level").get<double>(),
                               level.at("step").get<std::int64_t>(), level.at("seconds").get<double>()});
    info.pending_eval = header.value("pending_eval", std::int64_t(-1));
    check(info.step >= 0 && info.next.epoch >= 0 && info.next.batch >= 0 && info.batch_samples >= 0, path,
          "negative step, data position or batch size");
    return info;
}

}  // namespace

std::optional<std::int64_t> CheckpointStore::newest_step() const {
    auto files = checkpoints_in(folder_);
    if (files.empty()) return std::nullopt;
    return step_of(files.front());
}

CheckpointStore::CheckpointStore(std::string folder, int keep) : folder_(std::move(folder)), keep_(keep) {
    std::error_code error;
    fs::create_directories(folder_, error);
    if (error || !fs::is_directory(folder_))
        throw CheckpointError("checkpoint folder " + folder_ + ": " +
                              (error ? error.message() : std::string("not a directory")));
    for (const auto& entry : fs::directory_iterator(folder_, error)) {
        auto name = entry.path().filename().string();
        if (name.starts_with(".checkpoint-") && name.ends_with(".tmp")) {
            std::error_code ignored;
            if (fs::remove(entry.path(), ignored))
                std::cerr << "trellis-train: removed " << entry.path().string()
                          << ", left by a save that did not finish\n";
        }
    }
}

std::string CheckpointStore::save(const CheckpointInfo& info, nn::ParameterStore& parameters,
                                  optim::Optimizer& optimizer) {
    auto arrays = arrays_of(parameters, optimizer);
    nlohmann::json header{{"model", info.model},      {"num_classes", info.num_classes},  {"step", info.step},
                          {"epoch", info.next.epoch}, {"batch", info.next.batch},         {"optimizer", info.optimizer},
                          {"seed", info.seed},        {"global_batch", info.global_batch}};
    if (info.batch_samples > 0) header["batch_samples"] = info.batch_samples;
    if (!info.schedule.empty()) header["schedule"] = info.schedule;
    if (info.loss_scale > 0) {
        header["loss_scale"] = info.loss_scale;
        header["loss_scale_steps"] = info.loss_scale_steps;
    }
    if (info.train_seconds >= 0) {
        header["train_seconds"] = info.train_seconds;
        header["segment"] = info.segment;
        header["levels"] = nlohmann::json::array();
        for (const auto& level : info.levels)
            header["levels"].push_back(
                {{"metric", level.metric}, {"level", level.level}, {"step", level.step}, {"seconds", level.seconds}});
        if (info.pending_eval >= 0) header["pending_eval"] = info.pending_eval;
    }
    for (const auto& a : arrays) header["arrays"].push_back({{"name", a.name}, {"count", a.values.size()}});
    auto text = header.dump();

    std::vector<std::uint8_t> bytes;
    append(bytes, magic.data(), magic.size());
    std::uint64_t length = text.size();
    append(bytes, &length, sizeof length);
    append(bytes, text.data(), text.size());
    for (const auto& a : arrays) append(bytes, a.values.data(), a.values.size_bytes());
    std::uint32_t crc = data::crc32c(bytes);
    append(bytes, &crc, sizeof crc);

    auto final_path = (fs::path(folder_) / ("checkpoint-" + std::to_string(info.step) + ".trellis")).string();
    auto temporary = (fs::path(folder_) / (".checkpoint-" + std::to_string(info.step) + ".tmp")).string();
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw CheckpointError(temporary + ": cannot create: " + std::strerror(errno));
    try {
        write_fully(fd, bytes, temporary);
        if (::fsync(fd) != 0) throw CheckpointError(temporary + ": fsync failed: " + std::strerror(errno));
    } catch (...) {
        ::close(fd);
        ::unlink(temporary.c_str());
        throw;
    }
    ::close(fd);
    if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
        ::unlink(temporary.c_str());
        throw CheckpointError(final_path + ": rename failed: " + std::strerror(errno));
    }
    sync_folder(folder_);

    // Keep the newest `keep` checkpoints, this one always among them.
    auto files = checkpoints_in(folder_);
    std::size_t kept = 1;
    for (const auto& file : files) {
        if (file == final_path) continue;
        if (kept < std::size_t(keep_)) {
            ++kept;
            continue;
        }
        std::error_code ignored;
        fs::remove(file, ignored);
    }
    return final_path;
}

std::optional<CheckpointInfo> CheckpointStore::load_latest(const CheckpointInfo& expected,
                                                           nn::ParameterStore& parameters,
                                                           optim::Optimizer& optimizer) {
    for (const auto& path : checkpoints_in(folder_)) {
        std::vector<std::uint8_t> bytes;
        nlohmann::json header;
        std::size_t payload = 0;
        try {
            bytes = read_file(path);
            check(bytes.size() >= magic.size() + 12 && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0, path,
                  "not a trellis checkpoint");
            std::uint32_t stored;
            std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
            check(data::crc32c(std::span(bytes).first(bytes.size() - 4)) == stored, path,
                  "CRC mismatch (damaged or truncated)");
            std::uint64_t length;
            std::memcpy(&length, bytes.data() + magic.size(), 8);
            check(length <= bytes.size() - magic.size() - 12, path, "header longer than the file");
            payload = magic.size() + 8 + length;
            header = nlohmann::json::parse(bytes.begin() + magic.size() + 8, bytes.begin() + long(payload));
        } catch (const std::exception& error) {
            std::cerr << "trellis-train: warning: skipping checkpoint " << error.what() << "\n";
            continue;
        }
        try {
            return restore(path, header, bytes, payload, expected, parameters, optimizer);
        } catch (const nlohmann::json::exception& error) {
            throw CheckpointError(path.string() + ": malformed header: " + error.what());
        }
    }
    return std::nullopt;
}

}  // namespace trellis::checkpoint
