// SPDX-License-Identifier: Apache-2.0
// Where training metrics go besides the terminal: a JSON-lines file (one object per record)
// and a TensorBoard event file, both in --log-dir.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/data/tfrecord.hpp"
#include "trainer/train/run_clock.hpp"

namespace trellis::train {

// TensorBoard's event file: TFRecord framing around Event protos (wall_time = 1, step = 2,
// file_version = 3, summary = 5 holding Summary.Value{tag = 1, simple_value = 2}, or a text
// summary: Summary.Value{tag = 1, metadata = 9 naming the "text" plugin, tensor = 8 holding
// one DT_STRING}).
class TensorBoardWriter {
public:
    explicit TensorBoardWriter(const std::string& folder);
    void scalars(std::int64_t step, const std::map<std::string, double>& values);
    // Shown in TensorBoard's Text tab.
    void text(std::int64_t step, const std::string& tag, const std::string& value);
    void flush() { records_->flush(); }
    const std::string& path() const { return records_->path(); }

private:
    std::unique_ptr<data::TfRecordWriter> records_;
};

class MetricsLog {
public:
    // An empty folder disables both files.
    explicit MetricsLog(const std::string& folder);

    // Every record from then on carries the clock's segment and train_seconds (the training
    // time of the whole run so far), which tell the records of a resumed run's segments apart.
    void follow(const RunClock& clock) { clock_ = &clock; }

    // kind is "train" or "eval"; values become the record's fields and TensorBoard scalars
    // named "<kind>/<name>".
    void record(const std::string& kind, std::int64_t step, const std::map<std::string, double>& values);
    // The run's last "train" record: its totals (total_images_per_sec, ...) and the process's
    // peak_rss_bytes.
    void finished(std::int64_t step, const std::map<std::string, double>& totals);
    // The run's description, the file's first record ("kind": "run"): what the header says,
    // as fields that scripts and tests read instead of the banner text; in TensorBoard, the
    // same fields as the text "run/description".
    void describe(const nlohmann::json& run);
    // The last record of a run stopped by a signal ("kind": "stop"), with the signal's name
    // ("SIGUSR1": what a batch script's own --signal sends), empty when the signal reached
    // other ranks only, and the process's peak_rss_bytes.
    void stopped(std::int64_t step, const std::string& signal);
    void flush();

private:
    // Writes the record to both files; `exact` holds fields kept as JSON wrote them (whole
    // numbers stay whole), for metrics.jsonl only.
    void write(const std::string& kind, std::int64_t step, const std::map<std::string, double>& values,
               const nlohmann::json& exact);
    void stamp(nlohmann::json& line) const;

    std::ofstream jsonl_;
    std::unique_ptr<TensorBoardWriter> tensorboard_;
    const RunClock* clock_ = nullptr;
};

}  // namespace trellis::train
