// SPDX-License-Identifier: Apache-2.0
// The training run of one process, shared by the files that implement it: trainer.cpp (the
// loop, the device, the evaluations between steps) and run_continuity.cpp (what carries a run
// across processes: resuming, rank 0's start for every rank, checkpoints, stopping on a
// signal). Internal to trainer/train: train() in trainer.hpp is the interface.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "trainer/checkpoint/checkpoint.hpp"
#include "trainer/comm/allreduce.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/optim/schedule.hpp"
#include "trainer/train/data_sources.hpp"
#include "trainer/train/evaluation.hpp"
#include "trainer/train/gradient_sync.hpp"
#include "trainer/train/metrics_log.hpp"
#include "trainer/train/run_clock.hpp"
#include "trainer/train/run_start.hpp"
#include "trainer/train/throughput.hpp"
#include "trainer/train/time_to_accuracy.hpp"
#include "trainer/train/trainer.hpp"

namespace trellis::train {

// Training state that outlives single steps.
class Run {
public:
    Run(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport* transport);
    ~Run() {
        // The model's memory goes before the accelerator that page-locked it.
        if (accelerator_) accelerator_->unbind();
    }
    int execute();

private:
    Evaluation evaluate();
    // An evaluation between steps, which stops the run at --target-accuracy.
    void evaluate_towards_target();
    void restore_history(const checkpoint::CheckpointInfo& resumed);
    // Called by every rank at the same points: averages the statistics, then rank 0 saves.
    void checkpoint(std::int64_t step);
    // Saves (with --checkpoint-dir) and says why the run stopped; returns exit_stopped_early.
    int stop(int signal);
    void agree_statistics();
    void resume(RunStart& start);
    void carry_data_position(data::Position& next) const;
    checkpoint::CheckpointInfo checkpoint_info(std::int64_t step) const;
    void report_step(const ThroughputMeter& meter, double lr, double loss, const comm::CommStats& comm);
    void open_device();
    nn::Backend& backend() { return accelerator_ ? accelerator_->backend() : cpu_backend_; }
    void apply_gradients(float lr);
    void print_header();
    // One line on stdout, prefixed "[rank N] " on ranks other than 0, so that lines of
    // several ranks in one log (srun's, sbatch's) tell whose they are.
    void say(const char* format, ...) const __attribute__((format(printf, 2, 3)));
    void share_initial_state(RunStart& start);
    void sum_over_ranks(std::span<float> values);
    optim::ScheduleConfig schedule_config() const;

    const TrainOptions& options_;
    comm::Identity identity_;
    std::string wireup_;
    comm::Transport* transport_;  // null: a single process
    int workers_;                 // ranks that compute: all, or all but the parameter servers
    int global_batch_;            // images per step over all workers
    int threads_;
    const models::Architecture& architecture_;
    int image_size_;
    DataSources sources_;
    nn::cpu::CpuBackend cpu_backend_;
    std::unique_ptr<gpu::Accelerator> accelerator_;  // null: the CPU backend
    std::string device_note_;                        // why --device auto chose the CPU
    Decoding decoding_;                              // decided once the device is known
    bool optimizer_on_host_ = false;                 // a GPU run whose optimizer has no device kernel
    std::unique_ptr<models::Model> model_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    nn::SoftmaxCrossEntropy loss_;
    std::unique_ptr<data::BatchSource> train_source_;
    // Steps per epoch: the batches of an epoch over --accumulate, which need not divide them
    // (a step's batches then straddle the epoch's end), so counting in epochs stays exact.
    double steps_per_epoch_ = 1;
    std::int64_t total_steps_ = 0, step_ = 0;
    bool checkpointing_;                                      // --checkpoint-dir given
    std::optional<checkpoint::CheckpointStore> checkpoints_;  // rank 0's: the only one that reads and writes
    std::optional<checkpoint::CheckpointInfo> resumed_;       // what rank 0 resumed from
    std::int64_t statistics_agreed_at_ = -1;                  // the step at which they were last averaged
    std::int64_t eval_every_steps_ = 0;                       // 0: only at the end
    std::int64_t evaluated_at_ = -1;                          // the step of the last evaluation
    std::int64_t pending_eval_ = -1;                          // the step of an evaluation a signal abandoned
    RunClock clock_;                                          // the training time over every segment
    TimeToAccuracy time_to_accuracy_;
    MetricsLog metrics_;
    std::unique_ptr<optim::Schedule> schedule_;
    std::unique_ptr<comm::Allreduce> small_sums_;  // losses and evaluation counts over all ranks
    std::optional<SyncContext> sync_context_;
    std::unique_ptr<GradientSync> sync_;  // how the gradients become every rank's update
};

}  // namespace trellis::train
