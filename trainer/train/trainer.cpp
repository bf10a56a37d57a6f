// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/trainer.hpp"

#include <omp.h>
#include <sched.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "common/error.hpp"
#include "trainer/checkpoint/checkpoint.hpp"
#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/broadcast.hpp"
#include "trainer/data/batch_plan.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/convolution_probe.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/optim/schedule.hpp"
#include "trainer/train/data_sources.hpp"
#include "trainer/train/evaluation.hpp"
#include "trainer/train/gradient_sync.hpp"
#include "trainer/train/metrics_log.hpp"
#include "trainer/train/model_batch.hpp"
#include "trainer/train/open_device.hpp"
#include "trainer/train/run.hpp"
#include "trainer/train/run_header.hpp"
#include "trainer/train/run_start.hpp"
#include "trainer/train/stop_request.hpp"
#include "trainer/train/throughput.hpp"
#include "trainer/train/time_to_accuracy.hpp"

namespace trellis::train {

namespace {

int usable_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return CPU_COUNT(&set);
}

}  // namespace

Run::Run(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport* transport)
    : options_(options),
      identity_(wireup.identity()),
      wireup_(wireup.name()),
      transport_(transport),
      workers_(options.strategy == Strategy::ps && transport ? identity_.size - options.ps_servers : identity_.size),
      global_batch_(options.batch_size * options.accumulate * workers_),
      threads_(options.threads > 0 ? options.threads : usable_cpus()),
      architecture_(models::find_architecture(options.model)),
      image_size_(options.image_size.value_or(architecture_.default_image_size)),
      sources_(open_data_sources(options, image_size_, identity_.rank, workers_)),
      loss_(float(options.label_smoothing)),
      checkpointing_(!options.checkpoint_dir.empty()),
      metrics_(identity_.rank == 0 ? options.log_dir : std::string()) {
    // oneDNN runs on OpenMP; its default team already follows the affinity mask, but the
    // count is set explicitly so that --threads and the report agree.
    omp_set_num_threads(threads_);
    metrics_.follow(clock_);
    if (options.deterministic) omp_set_dynamic(0);

    if (options.target_accuracy && !sources_.eval_set)
        throw UsageError("--target-accuracy needs an evaluation set, and " + sources_.description +
                         " has none (accepted: DIR with DIR/val, tfrecord:GLOB with validation shards or "
                         "--eval-data, idx:DIR with its t10k files)");
    open_device();
    decoding_ = decoding_for(options, accelerator_ != nullptr);
    if (accelerator_ && options.accumulate > 1)
        throw UsageError("--accumulate " + std::to_string(options.accumulate) +
                         ": adding the gradients of several batches runs on the CPU backend only (--device cpu)");
    models::ModelOptions model_options{sources_.num_classes, options.zero_init_residual};
    model_ = std::make_unique<models::Model>(backend(), architecture_, model_options, options.batch_size, image_size_,
                                             options.seed);
    if (accelerator_) {
        accelerator_->bind(model_->parameters());
        model_->keep_unchanging_batches(accelerator_->speedups().synthetic_on_device);
        optimizer_ = accelerator_->device_optimizer(options.optimizer, model_->parameters());
        optimizer_on_host_ = !optimizer_;
    }
    if (!optimizer_) optimizer_ = optim::make_optimizer(options.optimizer, model_->parameters());

    RunStart start;
    if (checkpointing_ && identity_.rank == 0) resume(start);
    if (transport_) {
        // Built here, whatever carries the gradients, so that a schedule that cannot run on
        // this many ranks is refused at the start on every rank.
        small_sums_ = comm::make_allreduce(*transport_, options.allreduce_algorithm);
        share_initial_state(start);
    }
    step_ = start.step;
    pending_eval_ = start.pending_eval;
    if (accelerator_) {
        accelerator_->upload_values();
        accelerator_->restore_loss_scale({start.loss_scale, start.loss_scale_steps});
    }
    train_source_ = sources_.open_train(start.next, decoding_);
    steps_per_epoch_ = double(train_source_->steps_per_epoch()) / options.accumulate;
    if (options.steps)
        total_steps_ = *options.steps;
    else if (options.epochs)
        total_steps_ = std::max<std::int64_t>(1, std::llround(*options.epochs * steps_per_epoch_));
    else
        total_steps_ = 100;
    if (options.eval_every > 0)
        eval_every_steps_ = options.eval_every;
    else if (options.eval_every_epochs)
        eval_every_steps_ = std::max<std::int64_t>(1, std::llround(*options.eval_every_epochs * steps_per_epoch_));
    schedule_ = std::make_unique<optim::Schedule>(schedule_config());
    if (resumed_ && !resumed_->schedule.empty() && resumed_->schedule != optim::describe(schedule_->config()))
        say("warning: the learning-rate schedule changed on resuming: the checkpoint's was %s; this run's is %s\n",
            resumed_->schedule.c_str(), optim::describe(schedule_->config()).c_str());
    sync_context_.emplace(SyncContext{options, identity_, wireup_, transport_, small_sums_.get(), accelerator_.get(),
                                      model_->parameters()});
    sync_ = make_gradient_sync(*sync_context_, device_note_);
}

void Run::open_device() {
    auto opened = train::open_device(options_, identity_.local_rank);
    accelerator_ = std::move(opened.accelerator);
    device_note_ = opened.note;
    // Before the model's layers ask oneDNN for theirs: a library that dies making a
    // convolution on this CPU refuses the run with its name instead of killing it.
    if (!accelerator_) nn::cpu::require_working_convolutions();
}

// After the backward pass (and the gradient allreduce): the optimizer step on the device,
// or on the host copies for optimizers without a device kernel. Overflowed fp16 gradients
// skip the step.
void Run::apply_gradients(float lr) {
    if (accelerator_ && !accelerator_->finish_gradients(step_ + 1)) {
        if (identity_.rank == 0)
            std::printf("step %lld: fp16 gradients overflowed, step skipped, loss scale now %g\n",
                        static_cast<long long>(step_ + 1), double(accelerator_->loss_scale().scale));
        return;
    }
    if (accelerator_)
        for (const auto& late : accelerator_->late_overflows())
            if (identity_.rank == 0)
                std::printf("step %lld: fp16 gradients overflowed, the GPU skipped the step, loss scale now %g\n",
                            static_cast<long long>(late.step), double(late.scale_after));
    if (optimizer_on_host_) accelerator_->download_grads();
    optimizer_->step(lr);
    if (optimizer_on_host_) accelerator_->upload_learned_values();
}

void Run::sum_over_ranks(std::span<float> values) {
    if (!transport_) return;
    small_sums_->sum(values);
}

optim::ScheduleConfig Run::schedule_config() const {
    optim::ScheduleConfig config;
    config.kind = options_.lr_schedule;
    config.base_lr = options_.lr * double(global_batch_) / 256.0;
    config.warmup_steps = std::llround(options_.warmup_epochs * steps_per_epoch_);
    config.total_steps = total_steps_;
    for (double epoch : options_.lr_decay_epochs) config.boundaries.push_back(std::llround(epoch * steps_per_epoch_));
    config.decay = options_.lr_decay_factor;
    return config;
}

void Run::say(const char* format, ...) const {
    if (identity_.rank != 0) std::printf("[rank %d] ", identity_.rank);
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
    std::fflush(stdout);
}

void Run::print_header() {
    if (identity_.rank != 0) return;
    RunDescription run{.options = options_,
                       .architecture = architecture_,
                       .gmacs_per_image = model_->gmacs_per_image(),
                       .parameters = model_->parameters().learned_elements(),
                       .sources = sources_,
                       .image_size = image_size_,
                       .decoding = decoding_,
                       .global_batch = global_batch_,
                       .workers = workers_,
                       .ranks = identity_.size,
                       .wireup = wireup_,
                       .accelerator = accelerator_.get(),
                       .threads = threads_,
                       .device_note = device_note_,
                       .optimizer = *optimizer_,
                       .schedule = schedule_->config(),
                       .total_steps = total_steps_,
                       .steps_per_epoch = steps_per_epoch_,
                       .sync = *sync_,
                       .placement = {options_, identity_.host, transport_, accelerator_ != nullptr}};
    auto described = describe_run(run);
    metrics_.describe(described);
    print_run_header(run);
}

Evaluation Run::evaluate() {
    if (!sources_.open_eval) return {};
    // With parameter servers, rank 0 evaluates the whole set (the servers take no part in
    // collectives); with the allreduce, every rank its shard and the sums are combined.
    bool shared = transport_ && sync_->collective();
    if (transport_ && !shared && identity_.rank != 0) return {};
    agree_statistics();
    EvaluationPass pass{.sources = sources_,
                        .model = *model_,
                        .loss = loss_,
                        .decoding = decoding_,
                        .batch_size = options_.batch_size,
                        .image_size = image_size_,
                        .rank = shared ? identity_.rank : 0,
                        .ranks = shared ? identity_.size : 1,
                        .sums = shared ? small_sums_.get() : nullptr};
    auto scored = train::evaluate(pass);
    if (!scored) {
        // Saved in the checkpoint: the resumed run evaluates this step before its first.
        pending_eval_ = step_;
        if (identity_.rank == 0)
            std::printf("evaluation of step %lld abandoned: stop requested (a resumed run redoes it)\n",
                        static_cast<long long>(step_));
        return {};
    }
    pending_eval_ = -1;
    auto result = *scored;
    evaluated_at_ = step_;
    double seconds = clock_.seconds();
    if (identity_.rank == 0) {
        std::printf("Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%lld examples] (loss %.4f)\n", result.top1, result.top5,
                    static_cast<long long>(result.examples), result.loss);
        std::fflush(stdout);
    }
    metrics_.record("eval", step_,
                    {{"top1", result.top1},
                     {"top5", result.top5},
                     {"loss", result.loss},
                     {"examples", double(result.examples)},
                     {"seconds", seconds},
                     {"epoch", double(step_) / steps_per_epoch_}});
    for (const auto& reached : time_to_accuracy_.observe(seconds, step_, result.top1, result.top5))
        metrics_.record("time_to_accuracy", reached.step,
                        {{reached.metric + "_level", reached.level}, {"seconds", reached.seconds}});
    metrics_.flush();
    return result;
}

// The progress line (rank 0, every --display-every steps) and the step's metrics record.
void Run::report_step(const ThroughputMeter& meter, double lr, double loss, const comm::CommStats& comm) {
    if (identity_.rank == 0 && (step_ % options_.display_every == 0 || step_ == 1 || step_ == total_steps_)) {
        std::printf("%lld\timages/sec: %.1f +/- %.1f (jitter = %.1f)\t%.3f\t%.5g%s\n", static_cast<long long>(step_),
                    meter.total(), meter.uncertainty(), meter.jitter(), loss, lr,
                    sync_->progress(comm, identity_.size).c_str());
        std::fflush(stdout);
    }
    std::map<std::string, double> record{{"loss", loss}, {"lr", lr}, {"images_per_sec", meter.last()}};
    if (transport_) {
        record["comm_seconds"] = comm.seconds;
        record["comm_wait_seconds"] = comm.wait_seconds;
        if (sync_->collective()) record["busbw_gbs"] = comm.bus_bandwidth(identity_.size);
    }
    metrics_.record("train", step_, record);
}

void Run::evaluate_towards_target() {
    // Every rank has the same sums, so all stop at the same step.
    auto evaluation = evaluate();
    if (options_.target_accuracy && evaluation.top1 >= *options_.target_accuracy) {
        say("top-1 accuracy %.4f reached the target %.4f at step %lld: stopping\n", evaluation.top1,
            *options_.target_accuracy, static_cast<long long>(step_));
        total_steps_ = step_;
    }
}

int Run::execute() {
    print_header();
    // Resumed from the last step's checkpoint: no step to time, nothing to save again.
    const bool steps_left = step_ < total_steps_;
    ThroughputMeter meter(options_.warmup_batches);
    bool stop_agreed = false;
    using clock = std::chrono::steady_clock;
    clock_.start();
    if (pending_eval_ == step_ && step_ < total_steps_) {
        say("redoing the evaluation of step %lld, which a signal abandoned\n", static_cast<long long>(step_));
        evaluate_towards_target();
    }
    while (step_ < total_steps_) {
        // With several ranks, the decision taken together at the end of the last step counts
        // (-1: a signal that reached other ranks only).
        int signal = transport_ ? (stop_agreed ? (stop_requested() ? stop_requested() : -1) : 0) : stop_requested();
        if (signal) return stop(signal);
        auto started = clock::now();
        double lr = schedule_->at(step_);
        nn::LossResult result;
        std::int64_t images = 0;
        for (int part = 0; part < options_.accumulate; ++part) {
            const auto& batch = train_source_->next();
            auto scored = model_->train_step(images_of(batch), batch.labels, loss_, sync_->overlap(),
                                             {part, options_.accumulate, step_});
            result.loss += scored.loss / double(options_.accumulate);
            images += batch.size;
        }
        StepState state{step_, step_ + 1 == total_steps_, false, stop_requested() != 0, lr, result.loss};
        state.checkpoint_due =
            checkpointing_ &&
            ((options_.checkpoint_every > 0 && (step_ + 1) % options_.checkpoint_every == 0) || state.last);
        auto synced = sync_->finish(state);
        if (!synced.applied) apply_gradients(float(lr));
        result.loss = synced.loss;
        stop_agreed = synced.stop;
        ++step_;
        if (transport_ && sync_->collective()) {
            // One small allreduce per step: the mean loss over all ranks, and whether any rank
            // was asked to stop (a signal reaches ranks at slightly different steps; they stop
            // together so that none waits in an allreduce for a rank that has left).
            float shared[] = {stop_requested() ? 1.0f : 0.0f, float(result.loss)};
            sum_over_ranks(shared);
            stop_agreed = shared[0] > 0;
            result.loss = shared[1] / float(identity_.size);
        }

        if (!std::isfinite(result.loss)) {
            std::fprintf(stderr, "trellis-train: loss is %f at step %lld: training diverged (lower --lr?)\n",
                         result.loss, static_cast<long long>(step_));
            return 1;
        }
        // A step is timed end to end, the shared loss and stop flag included: the rates then add
        // up to the wall clock. Evaluations and checkpoints after it are not training.
        meter.add(std::chrono::duration<double>(clock::now() - started).count(), images * workers_);
        report_step(meter, lr, result.loss, synced.comm);
        if (eval_every_steps_ > 0 && step_ % eval_every_steps_ == 0 && step_ < total_steps_) evaluate_towards_target();
        if (options_.checkpoint_every > 0 && step_ % options_.checkpoint_every == 0) checkpoint(step_);
    }
    if (!steps_left) {
        say("nothing left to train: the checkpoint is at step %lld of %lld\n", static_cast<long long>(step_),
            static_cast<long long>(total_steps_));
    } else if (identity_.rank == 0) {
        std::printf("----------------------------------------------------------------\n");
        std::printf("total images/sec: %.2f\n", meter.total());
        if (accelerator_) {
            std::printf("peak GPU memory: %.0f MiB\n", double(accelerator_->peak_memory_bytes()) / (1 << 20));
            std::fputs(accelerator_->profile_report().c_str(), stdout);
        }
        std::printf("----------------------------------------------------------------\n");
        std::fflush(stdout);
    }
    if (steps_left) {
        std::map<std::string, double> totals{{"total_images_per_sec", meter.total()}};
        if (accelerator_) totals["peak_gpu_memory_mib"] = double(accelerator_->peak_memory_bytes()) / (1 << 20);
        metrics_.finished(step_, totals);
        // Saved before the final evaluation, which may be long: a preemption then loses nothing.
        if (options_.checkpoint_every == 0 || step_ % options_.checkpoint_every != 0) checkpoint(step_);
    }
    if (evaluated_at_ != step_) {
        evaluate();
        // A signal during the final evaluation: the checkpoint says it is still to be done.
        if (pending_eval_ == step_) return stop(stop_requested() ? stop_requested() : -1);
    }
    if (auto table = time_to_accuracy_.table(); identity_.rank == 0 && !table.empty()) {
        std::fputs(table.c_str(), stdout);
        std::fflush(stdout);
    }
    metrics_.flush();
    return 0;
}

int train(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport* transport) {
    install_stop_handlers();
    Run run(options, wireup, transport);
    return run.execute();
}

}  // namespace trellis::train
