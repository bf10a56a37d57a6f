// SPDX-License-Identifier: Apache-2.0
#include <sched.h>

#include <chrono>
#include <cstdio>

#include "trainer/bench/benchmarks.hpp"
#include "trainer/data/open_dataset.hpp"
#include "trainer/data/pipeline.hpp"

namespace trellis::bench {

namespace {

int usable_cpus() {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

// Training batches per second of a pipeline with `threads` decode threads: the warm-up
// batches first (threads starting, caches filling), then `iterations` timed ones.
double images_per_second(const BenchOptions& options, std::shared_ptr<const data::Dataset> set, int threads) {
    data::PipelineConfig config;
    config.dataset = std::move(set);
    config.batch_size = options.batch_size;
    config.image_size = options.image_size;
    config.threads = threads;
    config.prefetch = 2;
    config.raw_pixels = options.raw_pixels;
    data::Pipeline pipeline(config);
    for (int i = 0; i < options.warmup; ++i) pipeline.next();
    auto started = std::chrono::steady_clock::now();
    std::int64_t images = 0;
    for (int i = 0; i < options.iterations; ++i) images += pipeline.next().size;
    return double(images) / std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace

int run_data(const BenchOptions& options, Results& results) {
    auto set = data::open_datasets(options.data).train;
    auto counts = options.threads;
    if (counts.empty()) {
        counts = {1};
        if (usable_cpus() > 1) counts.push_back(usable_cpus());
    }
    results.begin(nullptr, "");
    if (results.table())
        std::printf(
            "input pipeline: %s\nbatches of %d, %dx%d %s, training transform, %d timed batches after %d\n"
            "%8s %14s %18s\n",
            set->describe().c_str(), options.batch_size, options.image_size, options.image_size,
            options.raw_pixels ? "bytes" : "floats", options.iterations, options.warmup, "threads", "images/s",
            "images/s/thread");
    for (int threads : counts) {
        double rate = images_per_second(options, set, threads);
        // In the order --json has always printed them (a sorted JSON object's).
        results.add({{"batch", options.batch_size},
                     {"benchmark", "data"},
                     {"image_size", options.image_size},
                     {"images_per_sec", rate},
                     {"per_thread", rate / threads},
                     {"pixels", options.raw_pixels ? "bytes" : "floats"},
                     {"threads", threads}});
        if (results.table()) std::printf("%8d %14.1f %18.1f\n", threads, rate, rate / threads);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace trellis::bench
