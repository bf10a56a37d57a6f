// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "common/error.hpp"
#include "data_fixtures.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/pipeline.hpp"
#include "trainer/data/pixel_output.hpp"

using namespace trellis::data;
using trellis::test::MemoryDataset;
using trellis::test::WarningLog;

namespace {

struct Delivered {
    std::vector<float> images;
    std::vector<int> labels;
    std::int64_t epoch, index;
    bool operator==(const Delivered&) const = default;
};

std::vector<Delivered> take(Pipeline& pipeline, int count) {
    std::vector<Delivered> batches;
    for (int i = 0; i < count; ++i) {
        const Batch& batch = pipeline.next();
        batches.push_back({batch.images, batch.labels, batch.epoch, batch.index_in_epoch});
    }
    return batches;
}

PipelineConfig small_config(std::shared_ptr<const Dataset> dataset) {
    PipelineConfig config;
    config.dataset = std::move(dataset);
    config.batch_size = 4;
    config.image_size = 24;
    config.seed = 2024;
    config.threads = 2;
    config.prefetch = 2;
    return config;
}

std::shared_ptr<MemoryDataset> jpegs(int count) {
    return std::make_shared<MemoryDataset>(MemoryDataset::jpegs(count), count);
}

}  // namespace

TEST_CASE("batches are the same whatever the thread count and prefetch depth") {
    auto dataset = jpegs(30);  // 7 steps per epoch, 2 samples dropped
    PipelineConfig config = small_config(dataset);
    config.threads = 1;
    config.prefetch = 1;
    Pipeline one_thread(config);
    CHECK(one_thread.steps_per_epoch() == 7);
    std::vector<Delivered> expected = take(one_thread, 16);

    config.threads = 3;
    config.prefetch = 4;
    Pipeline three_threads(config);
    std::vector<Delivered> actual = take(three_threads, 16);
    CHECK(actual == expected);

    CHECK(expected[7].epoch == 1);
    CHECK(expected[7].index == 0);
    CHECK(expected[0].labels != expected[7].labels);  // each epoch is reshuffled
    CHECK(three_threads.counters().samples_delivered == 16 * 4);
    CHECK(three_threads.counters().bad_samples == 0);
}

TEST_CASE("a pipeline started at a position continues the same sequence") {
    auto dataset = jpegs(30);
    PipelineConfig config = small_config(dataset);
    Pipeline from_start(config);
    std::vector<Delivered> all = take(from_start, 20);
    CHECK(from_start.position() == Position{2, 6});

    config.start = {1, 3};
    config.threads = 3;
    Pipeline resumed(config);
    CHECK(resumed.position() == Position{1, 3});
    std::vector<Delivered> rest = take(resumed, 10);
    CHECK(rest == std::vector<Delivered>(all.begin() + 10, all.end()));
    CHECK(resumed.position() == Position{2, 6});

    config.start = {0, 7};  // an epoch has batches 0..6
    CHECK_THROWS_AS(Pipeline(config), trellis::UsageError);
}

TEST_CASE("ranks read disjoint samples") {
    auto dataset = jpegs(30);
    SECTION("training") {
        std::set<int> seen;
        for (int rank = 0; rank < 2; ++rank) {
            PipelineConfig config = small_config(dataset);
            config.rank = rank;
            config.world_size = 2;
            Pipeline pipeline(config);
            CHECK(pipeline.steps_per_epoch() == 3);  // floor(30 / 8)
            for (const Delivered& batch : take(pipeline, 3))
                for (int label : batch.labels) CHECK(seen.insert(label).second);
        }
        CHECK(seen.size() == 24);
    }
    SECTION("evaluation covers every sample once, with a short last batch") {
        std::multiset<int> seen;
        for (int rank = 0; rank < 2; ++rank) {
            PipelineConfig config = small_config(dataset);
            config.transform = TransformKind::evaluation;
            config.rank = rank;
            config.world_size = 2;
            Pipeline pipeline(config);
            CHECK(pipeline.steps_per_epoch() == 4);  // 15 samples: 4 + 4 + 4 + 3
            for (int k = 0; k < 4; ++k) {
                const Batch& batch = pipeline.next();
                CHECK(batch.size == (k < 3 ? 4 : 3));
                CHECK(batch.labels.size() == static_cast<std::size_t>(batch.size));
                CHECK(batch.images.size() == static_cast<std::size_t>(batch.size) * 24 * 24 * 3);
                seen.insert(batch.labels.begin(), batch.labels.end());
            }
        }
        std::multiset<int> all;
        for (int i = 0; i < 30; ++i) all.insert(i);
        CHECK(seen == all);
    }
}

TEST_CASE("a corrupt JPEG is skipped and counted, or stops a strict run") {
    std::vector<EncodedSample> samples = MemoryDataset::jpegs(12);
    samples[5].bytes.assign(300, 0x17);
    auto dataset = std::make_shared<MemoryDataset>(samples, 12);
    PipelineConfig config = small_config(dataset);
    config.transform = TransformKind::evaluation;  // dataset order: sample 5 is slot 1 of batch 1

    SECTION("skipped") {
        WarningLog log;
        config.warn = log.sink();
        config.threads = 3;
        Pipeline pipeline(config);
        take(pipeline, 1);
        const Batch& batch = pipeline.next();
        CHECK(batch.size == 4);
        CHECK(batch.labels == std::vector<int>{4, 6, 6, 7});  // the next good sample stands in
        std::vector<float> slot1(batch.images.begin() + 24 * 24 * 3, batch.images.begin() + 2 * 24 * 24 * 3);
        std::vector<float> slot2(batch.images.begin() + 2 * 24 * 24 * 3, batch.images.begin() + 3 * 24 * 24 * 3);
        CHECK(slot1 == slot2);
        take(pipeline, 1);
        CHECK(pipeline.counters().bad_samples == 1);
        CHECK(pipeline.counters().samples_delivered == 11);
        REQUIRE(log.lines().size() == 1);
        CHECK_THAT(log.lines()[0], Catch::Contains("memory:5") && Catch::Contains("not a readable JPEG"));
    }
    SECTION("strict") {
        config.strict = true;
        Pipeline pipeline(config);
        CHECK_NOTHROW(pipeline.next());
        CHECK_THROWS_WITH(pipeline.next(), Catch::Contains("memory:5"));
        CHECK_THROWS_AS(pipeline.next(), DataError);  // it stays failed
        CHECK(pipeline.position() == Position{0, 1});
    }
}

TEST_CASE("a pipeline asked for bytes delivers the floats' pixels before normalisation, stand-ins included") {
    std::vector<EncodedSample> samples = MemoryDataset::jpegs(12);
    samples[5].bytes.assign(300, 0x17);
    PipelineConfig config = small_config(std::make_shared<MemoryDataset>(samples, 12));
    config.warn = [](const std::string&) {};
    Pipeline floats(config);
    config.raw_pixels = true;
    Pipeline bytes(config);
    auto normalisation = Normalisation::of(ChannelStatistics{});
    for (int b = 0; b < 3; ++b) {
        const Batch& f = floats.next();
        const Batch& r = bytes.next();
        REQUIRE(r.images.empty());
        REQUIRE(r.pixels.size() == f.images.size());
        CHECK(r.labels == f.labels);
        CHECK(r.stand_in == f.stand_in);
        CHECK(r.statistics.mean == ChannelStatistics{}.mean);
        for (std::size_t i = 0; i < r.pixels.size(); ++i) {
            int c = int(i % 3);
            float value = (f.images[i] - normalisation.bias[c]) / normalisation.gain[c];
            REQUIRE(std::abs(float(r.pixels[i]) - value) <= 0.5f + 1e-3f);
        }
    }
}

TEST_CASE("a batch with no good sample is an error even when not strict") {
    std::vector<EncodedSample> samples = MemoryDataset::jpegs(8);
    for (int i = 4; i < 8; ++i) samples[i].bytes = {0xff, 0xd8};
    PipelineConfig config = small_config(std::make_shared<MemoryDataset>(samples, 8));
    config.transform = TransformKind::evaluation;
    config.warn = [](const std::string&) {};
    Pipeline pipeline(config);
    CHECK_NOTHROW(pipeline.next());
    CHECK_THROWS_WITH(pipeline.next(), Catch::Contains("none of its 4 samples could be read"));
}

TEST_CASE("stopping does not hang, whatever the workers are doing") {
    using namespace std::chrono;
    auto slow = std::make_shared<MemoryDataset>(MemoryDataset::jpegs(64), 64, milliseconds(30));
    PipelineConfig config = small_config(slow);
    config.batch_size = 8;
    config.threads = 3;
    config.prefetch = 3;

    SECTION("destroyed mid-run") {
        auto start = steady_clock::now();
        {
            Pipeline pipeline(config);
            pipeline.next();
        }
        CHECK(steady_clock::now() - start < seconds(3));
    }
    SECTION("destroyed before the first batch") {
        auto start = steady_clock::now();
        { Pipeline pipeline(config); }
        CHECK(steady_clock::now() - start < milliseconds(500));
    }
    SECTION("stopped while the trainer waits in next()") {
        Pipeline pipeline(config);
        std::exception_ptr thrown;
        std::thread trainer([&] {
            try {
                for (;;) pipeline.next();
            } catch (...) {
                thrown = std::current_exception();
            }
        });
        std::this_thread::sleep_for(milliseconds(50));
        auto start = steady_clock::now();
        pipeline.stop();
        trainer.join();
        CHECK(steady_clock::now() - start < milliseconds(500));
        CHECK(thrown);
    }
}
