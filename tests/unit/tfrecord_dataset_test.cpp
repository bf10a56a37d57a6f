// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <filesystem>
#include <fstream>

#include "data_fixtures.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/example.hpp"
#include "trainer/data/read_only_file.hpp"
#include "trainer/data/tfrecord.hpp"
#include "trainer/data/tfrecord_dataset.hpp"
#include "trainer/data/tfrecord_index.hpp"

using namespace trellis::data;
using trellis::test::TempDir;
using trellis::test::WarningLog;

namespace {

// Shard s holds `per_shard` records; record r of shard s has label first_label + (s + r) % 3
// and the JPEG test_jpeg(8, 8, s * 100 + r).
std::vector<std::string> write_shards(const TempDir& dir, const std::string& split, int shards, int per_shard,
                                      int first_label) {
    std::vector<std::string> paths;
    for (int s = 0; s < shards; ++s) {
        char name[64];
        std::snprintf(name, sizeof name, "%s-%05d-of-%05d", split.c_str(), s, shards);
        paths.push_back(dir / name);
        TfRecordWriter writer(paths.back());
        for (int r = 0; r < per_shard; ++r)
            writer.write(encode_image_example(trellis::test::test_jpeg(8, 8, s * 100 + r), first_label + (s + r) % 3));
        writer.close();
    }
    return paths;
}

}  // namespace

TEST_CASE("shards are matched, sorted and indexed record by record") {
    TempDir dir;
    std::vector<std::string> paths = write_shards(dir, "train", 3, 4, 1);
    write_shards(dir, "validation", 1, 2, 1);
    TfRecordDataset train(dir / "train-*");
    CHECK(train.shards() == paths);
    CHECK(train.size() == 12);
    CHECK(train.label_offset() == 1);  // labels 1..3 as in TensorFlow's layout
    CHECK(train.num_classes() == 3);

    EncodedSample sample = train.load(5);  // shard 1, record 1
    CHECK(sample.label == (1 + 1) % 3);
    CHECK(sample.bytes == trellis::test::test_jpeg(8, 8, 101));
    CHECK_THAT(sample.source, Catch::StartsWith(paths[1] + ":"));
    CHECK(sample.source == train.source(5));
    CHECK_THAT(train.describe(), Catch::Contains("3 shards, 12 records, 3 classes"));

    TfRecordDataset validation(validation_glob_for(dir / "train-*"));
    CHECK(validation.size() == 2);
}

TEST_CASE("0-based labels are detected; explicit options win") {
    TempDir dir;
    write_shards(dir, "train", 1, 6, 0);
    TfRecordDataset detected(dir / "train-*");
    CHECK(detected.label_offset() == 0);
    CHECK(detected.num_classes() == 3);

    TfRecordDatasetOptions options;
    options.label_offset = 0;
    options.num_classes = 1000;
    TfRecordDataset given(dir / "train-*", options);
    CHECK(given.num_classes() == 1000);

    options.num_classes = 2;  // label 2 does not fit
    TfRecordDataset too_few(dir / "train-*", options);
    CHECK_THROWS_WITH(too_few.load(2), Catch::Contains("label 2") && Catch::Contains("[0, 2)"));
}

TEST_CASE("a truncated shard is warned about and its complete records kept") {
    TempDir dir;
    std::vector<std::string> paths = write_shards(dir, "train", 2, 5, 1);
    std::uint64_t last = TfRecordReader(paths[1]).scan_framing().offsets.back();
    std::filesystem::resize_file(paths[1], std::filesystem::file_size(paths[1]) - 7);

    WarningLog log;
    TfRecordDatasetOptions options;
    options.warn = log.sink();
    TfRecordDataset train(dir / "train-*", options);
    CHECK(train.size() == 9);
    REQUIRE(log.lines().size() == 1);
    CHECK_THAT(log.lines()[0], Catch::Contains(paths[1]) && Catch::Contains("record at byte " + std::to_string(last)) &&
                                   Catch::Contains("truncated") && Catch::Contains("keeping the 4 complete records"));
    for (std::size_t i = 0; i < train.size(); ++i) CHECK_NOTHROW(train.load(i));
}

TEST_CASE("a damaged shard gets no index, which could never describe it") {
    TempDir dir;
    std::vector<std::string> paths = write_shards(dir, "train", 2, 5, 1);
    std::filesystem::resize_file(paths[1], std::filesystem::file_size(paths[1]) - 7);
    std::vector<std::string> lines;
    auto counts = write_missing_indexes(dir / "train-*", [&](const std::string& line) { lines.push_back(line); });
    CHECK(counts.written == 1);
    CHECK(counts.damaged == 1);
    REQUIRE(lines.size() == 2);
    CHECK_THAT(lines[1], Catch::StartsWith(paths[1] + ": ") && Catch::Contains("truncated") &&
                             Catch::Contains("no index written (its 4 complete records"));
    CHECK_FALSE(std::filesystem::exists(paths[1] + ".idx"));
    CHECK_THROWS_WITH(write_index(paths[1], TfRecordReader(paths[1]).scan_framing()), Catch::Contains("damaged"));
}

TEST_CASE("a corrupted record fails at load with shard and offset") {
    TempDir dir;
    std::vector<std::string> paths = write_shards(dir, "train", 1, 3, 1);
    std::uint64_t second = TfRecordReader(paths[0]).scan_framing().offsets[1];
    Bytes file = read_whole_file(paths[0]);
    file[second + 12 + 40] ^= 0xff;
    trellis::test::write_file(paths[0], file);

    TfRecordDatasetOptions options;
    options.label_offset = 1;
    options.num_classes = 3;
    TfRecordDataset train(dir / "train-*", options);
    CHECK_THROWS_WITH(train.load(1), Catch::Contains(paths[0]) && Catch::Contains("byte " + std::to_string(second)) &&
                                         Catch::Contains("data CRC mismatch"));
}

TEST_CASE("no matching shard is an error before training starts") {
    TempDir dir;
    CHECK_THROWS_WITH(TfRecordDataset(dir / "train-*"),
                      Catch::Contains(dir / "train-*") && Catch::Contains("no file matches"));
    trellis::test::write_file(dir / "train-00000-of-00001", Bytes{});
    CHECK_THROWS_WITH(TfRecordDataset(dir / "train-*"), Catch::Contains("no complete record"));
}

TEST_CASE("the validation glob replaces the last 'train'") {
    CHECK(validation_glob_for("/data/train/train-*") == "/data/train/validation-*");
    CHECK(validation_glob_for("/data/imagenet/train-*-of-01024") == "/data/imagenet/validation-*-of-01024");
    CHECK(validation_glob_for("/data/shards-*").empty());
}

TEST_CASE("index files: written in DALI's format, read in place of the framing, ignored when stale") {
    TempDir dir;
    std::vector<std::string> paths = write_shards(dir, "train", 2, 3, 1);
    std::vector<std::string> written;
    CHECK(write_missing_indexes(dir / "train-*", [&](const std::string& p) { written.push_back(p); }).written == 2);
    CHECK(written == std::vector<std::string>{"wrote " + paths[0] + ".idx", "wrote " + paths[1] + ".idx"});
    CHECK(write_missing_indexes(dir / "train-*", [](const std::string&) {}).written == 0);  // current: left alone
    // No temporary file is left beside them.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 4);
    std::string why_not;
    auto offsets = read_index(paths[0], why_not);
    REQUIRE(offsets);
    CHECK(offsets->size() == 3);
    CHECK(offsets->front() == 0);
    CHECK(offsets == TfRecordReader(paths[0]).scan_framing().offsets);

    WarningLog log;
    TfRecordDatasetOptions options;
    options.warn = log.sink();
    TfRecordDataset indexed(dir / "train-*", options);
    CHECK(indexed.size() == 6);
    CHECK(indexed.load(4).bytes == trellis::test::test_jpeg(8, 8, 101));
    CHECK_THAT(indexed.describe(), Catch::Contains("2 shards indexed by .idx files"));
    CHECK(log.lines().empty());

    // An index that does not describe its shard is passed over, with the reason.
    std::ofstream(paths[1] + ".idx") << "0 10\n";
    TfRecordDataset scanned(dir / "train-*", options);
    CHECK(scanned.size() == 6);
    CHECK_THAT(scanned.describe(), Catch::Contains("1 shards indexed"));
    REQUIRE(log.lines().size() == 1);
    CHECK_THAT(log.lines()[0], Catch::Contains(paths[1] + ".idx: record 0 at byte 0 of size 10") &&
                                   Catch::Contains("reading the shard's framing instead"));
}
