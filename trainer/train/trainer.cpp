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
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/optim/schedule.hpp"
#include "trainer/train/data_sources.hpp"
#include "trainer/train/evaluation.hpp"
#include "trainer/train/global_batch_advice.hpp"
#include "trainer/train/gradient_sync.hpp"
#include "trainer/train/metrics_log.hpp"
#include "trainer/train/model_batch.hpp"
#include "trainer/train/open_device.hpp"
#include "trainer/train/run_clock.hpp"
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
    bool checkpointing_;                                 // --checkpoint-dir given
    std::optional<checkpoint::CheckpointStore> checkpoints_;  // rank 0's: the only one that reads and writes
    std::optional<checkpoint::CheckpointInfo> resumed_;      // what rank 0 resumed from
    std::int64_t statistics_agreed_at_ = -1;             // the step at which they were last averaged
    std::int64_t eval_every_steps_ = 0;                  // 0: only at the end
    std::int64_t evaluated_at_ = -1;                     // the step of the last evaluation
    std::int64_t pending_eval_ = -1;                     // the step of an evaluation a signal abandoned
    RunClock clock_;                                     // the training time over every segment
    TimeToAccuracy time_to_accuracy_;
    MetricsLog metrics_;
    std::unique_ptr<optim::Schedule> schedule_;
    std::unique_ptr<comm::Allreduce> small_sums_;  // losses and evaluation counts over all ranks
    std::optional<SyncContext> sync_context_;
    std::unique_ptr<GradientSync> sync_;  // how the gradients become every rank's update
};

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
    sync_context_.emplace(
        SyncContext{options, identity_, wireup_, transport_, small_sums_.get(), accelerator_.get(), model_->parameters()});
    sync_ = make_gradient_sync(*sync_context_, device_note_);
}

// Rank 0 alone reads the checkpoint folder: the others receive what it resumed from.
void Run::resume(RunStart& start) {
    checkpoints_.emplace(options_.checkpoint_dir);
    if (!options_.resume) {
        if (auto newest = checkpoints_->newest_step())
            throw checkpoint::CheckpointError(checkpoints_->folder() + " already holds checkpoints of another run (newest: step " +
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
    std::string skipped = carried.skipped == 0 ? std::string()
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

void Run::open_device() {
    auto opened = train::open_device(options_, identity_.local_rank);
    accelerator_ = std::move(opened.accelerator);
    device_note_ = opened.note;
}

// After the backward pass (and the gradient allreduce): the optimizer step on the device,
// or on the host copies for optimizers without a device kernel. Overflowed fp16 gradients
// skip the step.
void Run::apply_gradients(float lr) {
    if (accelerator_ && !accelerator_->finish_gradients()) {
        if (identity_.rank == 0)
            std::printf("step %lld: fp16 gradients overflowed, step skipped, loss scale now %g\n",
                        static_cast<long long>(step_ + 1), double(accelerator_->loss_scale().scale));
        return;
    }
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
                       .sync = *sync_};
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
    metrics_.record("eval", step_, {{"top1", result.top1}, {"top5", result.top5}, {"loss", result.loss},
                                    {"examples", double(result.examples)}, {"seconds", seconds},
                                    {"epoch", double(step_) / steps_per_epoch_}});
    for (const auto& reached : time_to_accuracy_.observe(seconds, step_, result.top1, result.top5))
        metrics_.record("time_to_accuracy", reached.step, {{reached.metric + "_level", reached.level}, {"seconds", reached.seconds}});
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
    const char* doing = checkpointing_ ? "saving a checkpoint and stopping" : "stopping (no --checkpoint-dir, nothing saved)";
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
        state.checkpoint_due = checkpointing_ && ((options_.checkpoint_every > 0 && (step_ + 1) % options_.checkpoint_every == 0) ||
                                                state.last);
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
    if (identity_.rank == 0) {
        std::printf("----------------------------------------------------------------\n");
        std::printf("total images/sec: %.2f\n", meter.total());
        if (accelerator_) {
            std::printf("peak GPU memory: %.0f MiB\n", double(accelerator_->peak_memory_bytes()) / (1 << 20));
            std::fputs(accelerator_->profile_report().c_str(), stdout);
        }
        std::printf("----------------------------------------------------------------\n");
        std::fflush(stdout);
    }
    std::map<std::string, double> totals{{"total_images_per_sec", meter.total()}};
    if (accelerator_) totals["peak_gpu_memory_mib"] = double(accelerator_->peak_memory_bytes()) / (1 << 20);
    metrics_.record("train", step_, totals);
    // Saved before the final evaluation, which may be long: a preemption then loses nothing.
    if (options_.checkpoint_every == 0 || step_ % options_.checkpoint_every != 0) checkpoint(step_);
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

}  // namespace

int train(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport* transport) {
    install_stop_handlers();
    Run run(options, wireup, transport);
    return run.execute();
}

}  // namespace trellis::train
