// SPDX-License-Identifier: Apache-2.0
// The run's header: the lines printed before the first step (model, data, batch, optimizer,
// device, strategy, the progress lines' fields), and the same facts as the first record of
// metrics.jsonl, for scripts and tests that should not parse the text.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/gpu/accelerator.hpp"
#include "trainer/models/architecture.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/optim/schedule.hpp"
#include "trainer/train/data_sources.hpp"
#include "trainer/train/gradient_sync.hpp"
#include "trainer/train/options.hpp"
#include "trainer/train/run_facts.hpp"

namespace trellis::train {

struct RunDescription {
    const TrainOptions& options;
    const models::Architecture& architecture;
    double gmacs_per_image = 0;
    std::int64_t parameters = 0;  // learned values
    const DataSources& sources;
    int image_size = 0;
    Decoding decoding;
    int global_batch = 0, workers = 0, ranks = 0;
    std::string wireup;
    const gpu::Accelerator* accelerator = nullptr;  // null: the CPU backend
    int threads = 0;
    std::string device_note;  // why --device auto chose the CPU
    const optim::Optimizer& optimizer;
    const optim::ScheduleConfig& schedule;
    std::int64_t total_steps = 0;
    double steps_per_epoch = 1;
    const GradientSync& sync;
    Placement placement;
};

// On stdout (the caller prints it on rank 0 only).
void print_run_header(const RunDescription& run);
// The metrics file's "run" record.
nlohmann::json describe_run(const RunDescription& run);

}  // namespace trellis::train
