// SPDX-License-Identifier: Apache-2.0
// What carries a run across processes and ranks: resuming from rank 0's checkpoint with the
// run's history, every rank starting from rank 0's state, saving checkpoints, and stopping on a
// signal so that the run can be resumed.
#include <chrono>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "trainer/comm/broadcast.hpp"
#include "trainer/data/batch_plan.hpp"
#include "trainer/train/global_batch_advice.hpp"
#include "trainer/train/run.hpp"
#include "trainer/train/stop_request.hpp"

namespace trellis::train {

// Rank 0 alone reads the checkpoint folder: the others receive what it resumed from.
void Run::resume(RunStart& start) {
    checkpoints_.emplace(options_.checkpoint_dir);
    if (!options_.resume) {
        if (auto newest = checkpoints_->newest_step())
            throw checkpoint::CheckpointError(
                checkpoints_->folder() + " already holds checkpoints of another run (newest: step " +
                std::to_string(*newest) + "): add --resume to continue it, or use another folder");
        return;
    }
    try {
        resumed_ = checkpoints_->load_latest(checkpoint_info(0), model_->parameters(), *optimizer_);
    } catch (const checkpoint::GlobalBatchMismatch& mismatch) {
        auto ranks = options_.strategy == Strategy::ps ? "workers" : "ranks";
        throw checkpoint::CheckpointError(std::string(mismatch.what()) + "; " +
                                          global_batch_advice(mismatch.saved, workers_, ranks));
    }
    if (!resumed_) {
        say("no checkpoint in %s: starting from scratch\n", checkpoints_->folder().c_str());
        return;
    }
    start = {resumed_->step, resumed_->next, resumed_->loss_scale, resumed_->loss_scale_steps, resumed_->pending_eval};
    say("resumed from %s at step %lld (epoch %lld, batch %lld)\n", checkpoints_->folder().c_str(),
        static_cast<long long>(start.step), static_cast<long long>(start.next.epoch),
        static_cast<long long>(start.next.batch));
    carry_data_position(start.next);
    restore_history(*resumed_);
}

// The clock, the segment and the accuracy levels reached continue where the checkpoint left
// them; a checkpoint written before they were recorded says so, once, here and in the table.
void Run::restore_history(const checkpoint::CheckpointInfo& resumed) {
    if (resumed.train_seconds < 0) {
        clock_.resume(0, 1);
        time_to_accuracy_.count_from(resumed.step);
        say("times before step %lld were not recorded (a checkpoint of an earlier trellis-train): the "
            "time-to-accuracy table and train_seconds count from here\n",
            static_cast<long long>(resumed.step));
        return;
    }
    clock_.resume(resumed.train_seconds, resumed.segment);
    std::vector<TimeToAccuracy::Reached> reached;
    for (const auto& level : resumed.levels) reached.push_back({level.metric, level.level, level.seconds, level.step});
    time_to_accuracy_.restore(std::move(reached));
    say("segment %d of this run: %.1f s of training before it\n", clock_.segment(), resumed.train_seconds);
}

// The global batch is checked on loading, but --accumulate may have changed, and with it the
// samples per batch of the data position: it is carried over in samples.
void Run::carry_data_position(data::Position& next) const {
    std::int64_t saved = resumed_->batch_samples, mine = std::int64_t(options_.batch_size) * workers_;
    if (saved == 0 || saved == mine) return;
    auto carried = data::carry_position(next, saved, mine, sources_.train_batches_per_epoch);
    std::string skipped = carried.skipped == 0
                              ? std::string()
                              : ", passing over " + std::to_string(carried.skipped) + " samples of epoch " +
                                    std::to_string(next.epoch) + " that make no whole batch";
    say("the checkpoint counts batches of %lld samples over all workers, this run %lld (another --accumulate): "
        "the data continues at epoch %lld, batch %lld%s\n",
        static_cast<long long>(saved), static_cast<long long>(mine), static_cast<long long>(carried.position.epoch),
        static_cast<long long>(carried.position.batch), skipped.c_str());
    next = carried.position;
}

void Run::share_initial_state(RunStart& start) {
    DatasetShape mine{sources_.num_classes, std::int64_t(sources_.eval_set ? sources_.eval_set->size() : 0)};
    auto shape = mine;
    share_dataset_shape(*transport_, shape);
    auto differs = [&](const char* what, const char* unit, std::int64_t here, std::int64_t on_rank0) {
        throw UsageError("the " + std::string(what) + " has " + std::to_string(here) + " " + unit + " here but " +
                         std::to_string(on_rank0) + " on rank 0 (" + sources_.description +
                         "): every rank must read the same dataset");
    };
    if (shape.classes != mine.classes) differs("dataset", "classes", mine.classes, shape.classes);
    // Every rank takes rank 0's number of turns in an evaluation (only rank 0 evaluates with
    // parameter servers), which a rank with another evaluation set would not meet.
    if (shape.eval_samples != mine.eval_samples && options_.strategy != Strategy::ps)
        differs("evaluation set", "samples", mine.eval_samples, shape.eval_samples);
    // Every rank starts from rank 0's model (its initial or resumed weights, statistics and
    // optimizer state), whatever the others initialised, and at rank 0's step and data
    // position. Parameter servers keep the optimizer state themselves (they load their own
    // shards of the step they are told).
    comm::broadcast_from_root(*transport_, model_->parameters().values());
    comm::broadcast_from_root(*transport_, model_->parameters().statistic_values());
    if (options_.strategy != Strategy::ps)
        for (auto& slot : optimizer_->state()) comm::broadcast_from_root(*transport_, *slot.values);
    share_run_start(*transport_, start);
}

checkpoint::CheckpointInfo Run::checkpoint_info(std::int64_t step) const {
    checkpoint::CheckpointInfo info;
    info.model = architecture_.name, info.num_classes = sources_.num_classes, info.step = step;
    info.optimizer = optim::optimizer_kinds().name(options_.optimizer.kind);
    info.seed = options_.seed, info.global_batch = global_batch_;
    if (train_source_) info.next = train_source_->position();
    info.batch_samples = std::int64_t(options_.batch_size) * workers_;
    if (schedule_) info.schedule = optim::describe(schedule_->config());
    if (accelerator_) {
        auto scale = accelerator_->loss_scale();
        info.loss_scale = scale.scale, info.loss_scale_steps = scale.finite_steps;
    }
    info.train_seconds = clock_.seconds();
    info.segment = clock_.segment();
    for (const auto& r : time_to_accuracy_.reached()) info.levels.push_back({r.metric, r.level, r.step, r.seconds});
    info.pending_eval = pending_eval_;
    return info;
}

// Each rank's running batch-norm statistics come from its own batches. Before an evaluation
// or a checkpoint they are averaged over the ranks (as the weights already are), so that
// every rank evaluates the same model and the checkpoint holds it. Training itself uses the
// batch's statistics and is not affected. Parameter servers: rank 0's statistics are used.
void Run::agree_statistics() {
    if (!transport_ || !sync_->collective() || statistics_agreed_at_ == step_) return;
    if (accelerator_) accelerator_->download_values();
    auto statistics = model_->parameters().statistic_values();
    sum_over_ranks(statistics);
    for (float& value : statistics) value /= float(identity_.size);
    if (accelerator_) accelerator_->upload_values();
    statistics_agreed_at_ = step_;
}

void Run::checkpoint(std::int64_t step) {
    if (!checkpointing_) return;
    agree_statistics();
    // The checkpoint holds the loss scale after this step's verdict, which a GPU reading it a
    // step late takes in here: on every rank, so that all of them scale the next step alike.
    if (accelerator_) accelerator_->loss_scale();
    if (!checkpoints_) return;  // ranks other than 0
    if (accelerator_) accelerator_->download_values();
    auto begun = std::chrono::steady_clock::now();
    auto path = checkpoints_->save(checkpoint_info(step), model_->parameters(), *optimizer_);
    // The time a save takes is what a preempted job needs of Slurm's KillWait.
    say("checkpoint saved: %s (%.1f s)\n", path.c_str(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count());
}

int Run::stop(int signal) {
    // Other ranks stop because a rank was signalled: they may have seen no signal themselves.
    bool own = signal == stop_requested();
    auto name = own ? signal_name(signal) : std::string("a signal to another rank");
    const char* doing =
        checkpointing_ ? "saving a checkpoint and stopping" : "stopping (no --checkpoint-dir, nothing saved)";
    if (own)
        say("received signal %d (%s) at step %lld: %s\n", signal, name.c_str(), static_cast<long long>(step_), doing);
    else
        say("another rank received a signal at step %lld: %s\n", static_cast<long long>(step_), doing);
    checkpoint(step_);
    metrics_.stopped(step_, own ? name : "");
    metrics_.flush();
    say("stopped by %s at step %lld of %lld: exit status %d%s\n", name.c_str(), static_cast<long long>(step_),
        static_cast<long long>(total_steps_), exit_stopped_early,
        checkpointing_ ? " (run again with --resume to continue)" : "");
    return exit_stopped_early;
}

}  // namespace trellis::train
