// SPDX-License-Identifier: Apache-2.0
// trellis-train's command line: defaults, both value forms, and the refusals.
#include "tests/catch.hpp"

#include <sched.h>

#include <algorithm>

#include "trainer/train/data_sources.hpp"
#include "trainer/train/options.hpp"

using namespace trellis::train;

namespace {
TrainOptions parse(std::vector<std::string> args) { return parse_train_options(args).options; }
}  // namespace

TEST_CASE("defaults and values in both forms") {
    auto o = parse({});
    CHECK(o.model == "resnet50");
    CHECK(o.batch_size == 32);
    CHECK(o.data == "synthetic");
    o = parse({"--model", "resnet20", "--batch-size=64", "--lr", "0.2", "--nesterov", "--lr-decay-epochs", "5,10"});
    CHECK(o.model == "resnet20");
    CHECK(o.batch_size == 64);
    CHECK(o.lr == 0.2);
    CHECK(o.optimizer.nesterov);
    CHECK(o.lr_decay_epochs == std::vector<double>{5, 10});
    CHECK(parse_train_options({"--help"}).action == ParsedCommand::Action::help);
}

TEST_CASE("bad values name the option and what is accepted") {
    CHECK_THROWS_WITH(parse({"--batch-size", "0"}),
                      Catch::Contains("--batch-size") && Catch::Contains("a whole number of at least 1"));
    CHECK_THROWS_WITH(parse({"--batch-size", "12x"}), Catch::Contains("'12x'"));
    CHECK_THROWS_WITH(parse({"--optimizer", "adam"}), Catch::Contains("accepted: sgd, rmsprop, lars"));
    CHECK_THROWS_WITH(parse({"--lr-schedule", "exp"}), Catch::Contains("accepted: step, cosine, poly, constant"));
    CHECK_THROWS_WITH(parse({"--momentum", "1"}), Catch::Contains("at least 0 and below 1"));
    CHECK_THROWS_WITH(parse({"--epochs", "1", "--steps", "5"}), Catch::Contains("not both"));
    CHECK_THROWS_WITH(parse({"--resume"}), Catch::Contains("--checkpoint-dir"));
    CHECK_THROWS_WITH(parse({"--frobnicate"}), Catch::Contains("unknown option '--frobnicate'"));
    CHECK_THROWS_WITH(parse({"--model"}), Catch::Contains("needs a value"));
    CHECK_THROWS_WITH(parse({"--resume=yes"}), Catch::Contains("takes no value"));
    CHECK_THROWS_WITH(parse({"--lr", "nan"}), Catch::Contains("'nan'"));
    CHECK_THROWS_WITH(parse({"--epochs", "inf"}), Catch::Contains("'inf'"));
    CHECK(parse({"--optimizer", "momentum"}).optimizer.kind == trellis::optim::OptimizerKind::sgd);
}

TEST_CASE(
    "decoding: threads as given, else the affinity mask's CPUs for a GPU and at most 2 on the CPU; bytes for a GPU") {
    cpu_set_t set;
    REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
    int cpus = CPU_COUNT(&set);
    CHECK(decoding_for(parse({"--data-threads", "5"}), true).threads == 5);
    CHECK(decoding_for(parse({"--data-threads", "5"}), false).threads == 5);
    CHECK(decoding_for(parse({}), false).threads == std::min(2, cpus));
    CHECK(decoding_for(parse({}), true).threads == cpus);
    CHECK(decoding_for(parse({}), true).raw_pixels);
    CHECK_FALSE(decoding_for(parse({}), false).raw_pixels);
    CHECK(decoding_for(parse({"--pixels", "bytes"}), false).raw_pixels);
    CHECK_FALSE(decoding_for(parse({"--pixels", "floats"}), true).raw_pixels);
    CHECK_THROWS_WITH(parse({"--pixels", "ints"}), Catch::Contains("accepted: auto, floats, bytes"));
}

TEST_CASE("accumulation, evaluation by epochs and the accuracy target, and what they need") {
    auto o = parse({"--accumulate", "4", "--eval-every-epochs", "0.5", "--target-accuracy", "0.9"});
    CHECK(o.accumulate == 4);
    CHECK(*o.eval_every_epochs == 0.5);
    CHECK(*o.target_accuracy == 0.9);
    CHECK_THROWS_WITH(parse({"--accumulate", "0"}), Catch::Contains("--accumulate"));
    CHECK_THROWS_WITH(parse({"--eval-every", "10", "--eval-every-epochs", "1"}), Catch::Contains("not both"));
    CHECK_THROWS_WITH(parse({"--target-accuracy", "0.9"}), Catch::Contains("needs --eval-every"));
    CHECK_THROWS_WITH(parse({"--target-accuracy", "0.9", "--eval-every", "5", "--strategy", "ps"}),
                      Catch::Contains("needs --strategy allreduce"));
    CHECK_THROWS_WITH(parse({"--data", "idx:/usr/share/datasets/fashion-mnist", "--eval-data", "/x/val-*"}),
                      Catch::Contains("--eval-data is for --data tfrecord:GLOB") && Catch::Contains("t10k"));
    CHECK(parse({"--data", "tfrecord:/x/train-*", "--eval-data", "/x/val-*"}).eval_data == "/x/val-*");
}
