// SPDX-License-Identifier: Apache-2.0
// Checkpoints: round trip, atomic files, damaged newest passed over, wrong model refused.
#include "tests/catch.hpp"

#include <filesystem>
#include <fstream>

#include "trainer/data/crc32c.hpp"
#include "trainer/checkpoint/checkpoint.hpp"

using namespace trellis;
namespace fs = std::filesystem;

namespace {

struct Fixture {
    fs::path folder;
    nn::Parameter weight{"w", tensor::Shape{3}, nn::ParameterKind::weight};
    nn::Parameter mean{"m", tensor::Shape{2}, nn::ParameterKind::running_stat};
    nn::ParameterStore store;
    std::unique_ptr<optim::Optimizer> optimizer;
    checkpoint::CheckpointInfo info;

    Fixture() {
        info.model = "resnet8", info.num_classes = 10, info.optimizer = "sgd", info.seed = 1, info.global_batch = 32;
        char name[] = "/tmp/trellis-checkpoint-XXXXXX";
        folder = ::mkdtemp(name);
        store.add(weight);
        store.add(mean);
        store.allocate();
        optimizer = optim::make_optimizer({}, store);
    }
    ~Fixture() { fs::remove_all(folder); }
    void set(float base) {
        for (int i = 0; i < 3; ++i) weight.value[i] = base + float(i), weight.grad[i] = 1.0f;
        mean.value[0] = base * 10;
        optimizer->step(0.1f);  // gives the momentum slot a value
    }
};

}  // namespace

TEST_CASE("save then load restores values, statistics, optimizer state and position") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    f.set(1.0f);
    f.info.step = 7;
    f.info.next = {1, 2};
    auto path = store.save(f.info, f.store, *f.optimizer);
    CHECK(fs::path(path).filename() == "checkpoint-7.trellis");
    auto saved_weight = f.weight.value[1];
    auto saved_momentum = (*f.optimizer->state()[0].values)[1];
    f.set(5.0f);
    auto loaded = store.load_latest(f.info, f.store, *f.optimizer);
    REQUIRE(loaded);
    CHECK(loaded->step == 7);
    CHECK(loaded->next == data::Position{1, 2});
    CHECK(f.weight.value[1] == saved_weight);
    CHECK(f.mean.value[0] == 10.0f);
    CHECK((*f.optimizer->state()[0].values)[1] == saved_momentum);
    for (auto& entry : fs::directory_iterator(f.folder))  // no temporary left behind
        CHECK(entry.path().filename().string().front() != '.');
}

TEST_CASE("a damaged newest checkpoint is passed over; only the newest three are kept") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    for (int step = 1; step <= 5; ++step) {
        f.set(float(step));
        f.info.step = step;
        store.save(f.info, f.store, *f.optimizer);
    }
    int files = 0;
    for (auto& entry : fs::directory_iterator(f.folder)) files += entry.is_regular_file();
    CHECK(files == 3);
    fs::resize_file(f.folder / "checkpoint-5.trellis", 100);  // truncated, as by a crash
    auto loaded = store.load_latest(f.info, f.store, *f.optimizer);
    REQUIRE(loaded);
    CHECK(loaded->step == 4);
}

TEST_CASE("a checkpoint of another model is refused with both names") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    f.set(1.0f);
    store.save(f.info, f.store, *f.optimizer);
    auto other = f.info;
    other.model = "resnet20";
    CHECK_THROWS_WITH(store.load_latest(other, f.store, *f.optimizer),
                      Catch::Contains("model is resnet8, this run has resnet20"));
}

TEST_CASE("an empty folder has no checkpoint") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    CHECK_FALSE(store.load_latest(f.info, f.store, *f.optimizer));
}

TEST_CASE("a malformed header or another global batch is a CheckpointError naming the file") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    f.set(1.0f);
    store.save(f.info, f.store, *f.optimizer);
    auto other = f.info;
    other.global_batch = 64;
    CHECK_THROWS_WITH(store.load_latest(other, f.store, *f.optimizer),
                      Catch::Contains("global batch is 32, this run has 64"));

    // A well-framed file (valid CRC) whose header is not what a checkpoint holds.
    std::string header = "[1,2,3]";
    std::vector<std::uint8_t> bytes;
    std::string magic = "TRELLIS-CHECKPOINT 1\n";
    bytes.insert(bytes.end(), magic.begin(), magic.end());
    std::uint64_t length = header.size();
    bytes.insert(bytes.end(), reinterpret_cast<std::uint8_t*>(&length), reinterpret_cast<std::uint8_t*>(&length) + 8);
    bytes.insert(bytes.end(), header.begin(), header.end());
    std::uint32_t crc = data::crc32c(bytes);
    bytes.insert(bytes.end(), reinterpret_cast<std::uint8_t*>(&crc), reinterpret_cast<std::uint8_t*>(&crc) + 4);
    std::ofstream(f.folder / "checkpoint-9.trellis", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    CHECK_THROWS_WITH(store.load_latest(f.info, f.store, *f.optimizer),
                      Catch::Contains("checkpoint-9.trellis") && Catch::Contains("not a JSON object"));
}

TEST_CASE("the checkpoint just written is kept even when older runs left higher steps") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    for (int step : {10, 20, 30, 2}) {
        f.set(1.0f);
        f.info.step = step;
        store.save(f.info, f.store, *f.optimizer);
    }
    CHECK(fs::exists(f.folder / "checkpoint-2.trellis"));
    CHECK(*store.newest_step() == 30);
}

TEST_CASE("the schedule, the batch of the data position and fp16's loss scale travel with the checkpoint") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    f.set(1.0f);
    f.info.step = 3;
    f.info.schedule = "step: lr 0.1, 100 steps";
    f.info.loss_scale = 8192.0f;
    f.info.loss_scale_steps = 1234;
    f.info.batch_samples = 96;
    store.save(f.info, f.store, *f.optimizer);
    auto expected = f.info;
    expected.schedule.clear(), expected.loss_scale = 0, expected.loss_scale_steps = 0, expected.batch_samples = 48;
    auto loaded = store.load_latest(expected, f.store, *f.optimizer);
    REQUIRE(loaded);
    CHECK(loaded->schedule == "step: lr 0.1, 100 steps");
    CHECK(loaded->loss_scale == 8192.0f);
    CHECK(loaded->loss_scale_steps == 1234);
    CHECK(loaded->batch_samples == 96);
}

TEST_CASE("the run's history travels with the checkpoint; one without it says so") {
    Fixture f;
    checkpoint::CheckpointStore store(f.folder.string());
    f.set(1.0f);
    f.info.step = 5;
    f.info.train_seconds = 12.5, f.info.segment = 2, f.info.pending_eval = 5;
    f.info.levels = {{"top5", 0.5, 3, 4.25}, {"top1", 0.6, 5, 12.0}};
    store.save(f.info, f.store, *f.optimizer);
    auto expected = f.info;
    expected.train_seconds = -1, expected.segment = 0, expected.pending_eval = -1, expected.levels.clear();
    auto loaded = store.load_latest(expected, f.store, *f.optimizer);
    REQUIRE(loaded);
    CHECK(loaded->train_seconds == 12.5);
    CHECK(loaded->segment == 2);
    CHECK(loaded->pending_eval == 5);
    REQUIRE(loaded->levels.size() == 2);
    CHECK(loaded->levels[1].metric == "top1");
    CHECK(loaded->levels[1].level == 0.6);
    CHECK(loaded->levels[1].step == 5);
    CHECK(loaded->levels[1].seconds == 12.0);

    // Written without a history (as before it was recorded): the loaded one is empty, whatever
    // the expected info held.
    f.info.step = 6, f.info.train_seconds = -1;
    store.save(f.info, f.store, *f.optimizer);
    loaded = store.load_latest(f.info, f.store, *f.optimizer);
    REQUIRE(loaded);
    CHECK(loaded->step == 6);
    CHECK(loaded->train_seconds < 0);
    CHECK(loaded->levels.empty());
    CHECK(loaded->pending_eval == -1);
}

TEST_CASE("opening a folder removes the temporary files of unfinished saves, and only those") {
    Fixture f;
    std::ofstream(f.folder / ".checkpoint-40.tmp") << "cut short";
    std::ofstream(f.folder / "notes.txt") << "the user's";
    checkpoint::CheckpointStore store(f.folder.string());
    CHECK_FALSE(fs::exists(f.folder / ".checkpoint-40.tmp"));
    CHECK(fs::exists(f.folder / "notes.txt"));
}
