// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/run_header.hpp"

#include <cstdio>

namespace trellis::train {

nlohmann::json describe_run(const RunDescription& run) {
    nlohmann::json described{{"model", run.architecture.name},
                             {"model_version", run.architecture.form},
                             {"gmacs_per_image", run.gmacs_per_image},
                             {"parameters", run.parameters},
                             {"classes", run.sources.num_classes},
                             {"image_size", run.image_size},
                             {"global_batch", run.global_batch},
                             {"accumulate", run.options.accumulate},
                             {"ranks", run.ranks},
                             {"wireup", run.wireup},
                             {"device", run.accelerator ? "cuda" : "cpu"},
                             {"optimizer", run.optimizer.name()},
                             {"lr_schedule", optim::schedule_kinds().name(run.options.lr_schedule)},
                             {"steps", run.total_steps},
                             {"warmup_steps", run.schedule.warmup_steps}};
    run.sync.describe(described);
    describe_placement(run.placement, described);
    return described;
}

void print_run_header(const RunDescription& run) {
    const auto& options = run.options;
    auto parameters = double(run.parameters) / 1e6;
    const auto& form = run.architecture.form;
    std::printf("Model:       %s%s%s%s (%.2fM parameters, %.2f GMACs per image, %d classes, %dx%d images",
                run.architecture.name.c_str(), form.empty() ? "" : " (", form.c_str(), form.empty() ? "" : ")",
                parameters, run.gmacs_per_image, run.sources.num_classes, run.image_size, run.image_size);
    if (run.image_size != run.architecture.default_image_size)
        std::printf("; the model's own size is %d", run.architecture.default_image_size);
    std::printf(")\n");
    if (run.sources.train_set)
        std::printf("Data:        %s, %d decoding %s, %s\n", run.sources.description.c_str(), run.decoding.threads,
                    run.decoding.threads == 1 ? "thread" : "threads",
                    run.decoding.raw_pixels ? "bytes normalised by the backend" : "normalised floats");
    else
        std::printf("Data:        %s\n", run.sources.description.c_str());
    std::printf("Batch size:  %d global, %d per worker, %d %s", run.global_batch,
                options.batch_size * options.accumulate, run.workers, run.workers == 1 ? "worker" : "workers");
    if (options.accumulate > 1)
        std::printf(" (%d batches of %d added per step)", options.accumulate, options.batch_size);
    std::printf("\n");
    auto warmup = run.schedule.warmup_steps;
    std::printf("Optimizer:   %s, lr %.5g (%.5g per 256 images), %s schedule, %lld steps (%.4g per epoch)",
                run.optimizer.name().c_str(), run.schedule.base_lr, options.lr,
                optim::schedule_kinds().name(options.lr_schedule).c_str(), static_cast<long long>(run.total_steps),
                run.steps_per_epoch);
    if (warmup > 0)
        std::printf(", warm-up %lld steps (%.4g epochs)", static_cast<long long>(warmup), options.warmup_epochs);
    std::printf("\n");
    // A warm-up set for a full training run (5 epochs) makes a short trial one long ramp: the
    // learning rate never reaches the one asked for, and the losses say little.
    if (warmup > run.total_steps)
        std::printf(
            "warning: the warm-up (--warmup-epochs %g, %lld steps) outlasts the run (%lld steps): the learning "
            "rate ends at %.3g, not %.5g; give a shorter --warmup-epochs for a short run\n",
            options.warmup_epochs, static_cast<long long>(warmup), static_cast<long long>(run.total_steps),
            run.schedule.base_lr * double(run.total_steps) / double(warmup), run.schedule.base_lr);
    if (run.accelerator)
        std::printf("Device:      %s\n", run.accelerator->description().c_str());
    else
        std::printf("Device:      cpu (oneDNN), %d %s%s%s\n", run.threads, run.threads == 1 ? "thread" : "threads",
                    run.device_note.empty() ? "" : "; ", run.device_note.c_str());
    if (auto strategy = run.sync.strategy(); !strategy.empty()) std::printf("Strategy:    %s\n", strategy.c_str());
    // Every field of the progress lines, in their order.
    std::printf("Step\tImg/sec (so far, +/- standard error of per-step rates, jitter)\ttotal_loss\tlr%s\n",
                run.sync.progress_header().c_str());
    std::fflush(stdout);
}

}  // namespace trellis::train
