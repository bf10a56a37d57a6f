// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/metrics_log.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/host.hpp"
#include "common/log_file.hpp"
#include "trainer/data/protobuf_wire.hpp"
#include "trainer/train/run_facts.hpp"

namespace trellis::train {

namespace {

double wall_time() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

data::WireWriter event_header(std::int64_t step) {
    data::WireWriter event;
    event.double_field(1, wall_time());
    event.int64_field(2, step);
    return event;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& folder) {
    auto name = "events.out.tfevents." + std::to_string(static_cast<long long>(wall_time())) + "." + host_name() + "." +
                std::to_string(::getpid()) + ".trellis";
    records_ = std::make_unique<data::TfRecordWriter>((std::filesystem::path(folder) / name).string());
    auto version = event_header(0);
    version.string_field(3, "brain.Event:2");
    records_->write(version.bytes());
}

void TensorBoardWriter::scalars(std::int64_t step, const std::map<std::string, double>& values) {
    data::WireWriter summary;
    for (const auto& [tag, value] : values) {
        data::WireWriter entry;
        entry.string_field(1, tag);
        entry.float_field(2, float(value));
        summary.message_field(1, entry);
    }
    auto event = event_header(step);
    event.message_field(5, summary);
    records_->write(event.bytes());
}

void TensorBoardWriter::text(std::int64_t step, const std::string& tag, const std::string& value) {
    constexpr std::uint64_t dt_string = 7;
    data::WireWriter plugin, metadata, tensor, entry, summary;
    plugin.string_field(1, "text");
    metadata.message_field(1, plugin);
    tensor.varint_field(1, dt_string);
    tensor.message_field(2, data::WireWriter());  // a scalar: a shape without dimensions
    tensor.string_field(8, value);
    entry.string_field(1, tag);
    entry.message_field(9, metadata);
    entry.message_field(8, tensor);
    summary.message_field(1, entry);
    auto event = event_header(step);
    event.message_field(5, summary);
    records_->write(event.bytes());
}

MetricsLog::MetricsLog(const std::string& folder) {
    if (folder.empty()) return;
    // A resumed run appends to its first segment's file.
    jsonl_ = open_log_file(folder, "metrics.jsonl");
    tensorboard_ = std::make_unique<TensorBoardWriter>(folder);
}

void MetricsLog::record(const std::string& kind, std::int64_t step, const std::map<std::string, double>& values) {
    write(kind, step, values, nlohmann::json::object());
}

void MetricsLog::finished(std::int64_t step, const std::map<std::string, double>& totals) {
    write("train", step, totals, {{"peak_rss_bytes", peak_rss_bytes()}});
}

void MetricsLog::write(const std::string& kind, std::int64_t step, const std::map<std::string, double>& values,
                       const nlohmann::json& exact) {
    if (!tensorboard_) return;
    nlohmann::json line{{"kind", kind}, {"step", step}, {"time", wall_time()}};
    line.update(exact);
    std::map<std::string, double> scalars;
    for (const auto& [name, value] : values) {
        line[name] = value;
        scalars[kind + "/" + name] = value;
    }
    stamp(line);
    // Flushed per record: users and tests follow the file while the run goes on.
    jsonl_ << line.dump() << '\n' << std::flush;
    tensorboard_->scalars(step, scalars);
}

void MetricsLog::describe(const nlohmann::json& run) {
    if (!tensorboard_) return;
    nlohmann::json line = run;
    line["kind"] = "run";
    line["time"] = wall_time();
    stamp(line);
    jsonl_ << line.dump() << '\n' << std::flush;
    tensorboard_->text(0, "run/description", run.dump(1));
}

void MetricsLog::stopped(std::int64_t step, const std::string& signal) {
    if (!tensorboard_) return;
    nlohmann::json line{{"kind", "stop"},
                        {"step", step},
                        {"time", wall_time()},
                        {"signal", signal},
                        {"peak_rss_bytes", peak_rss_bytes()}};
    stamp(line);
    jsonl_ << line.dump() << '\n' << std::flush;
}

void MetricsLog::stamp(nlohmann::json& line) const {
    if (!clock_) return;
    line["segment"] = clock_->segment();
    line["train_seconds"] = clock_->seconds();
}

void MetricsLog::flush() {
    if (!tensorboard_) return;
    jsonl_.flush();
    tensorboard_->flush();
}

}  // namespace trellis::train
