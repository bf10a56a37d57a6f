// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <filesystem>

#include "data_fixtures.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/data/image_folder.hpp"

using namespace trellis::data;
using trellis::test::TempDir;
using trellis::test::write_file;

namespace {

void make_tree(const TempDir& dir) {
    Bytes jpeg = trellis::test::test_jpeg(8, 8);
    // Created out of order: listing order must not matter.
    write_file(dir / "train/n02/b.JPEG", jpeg);
    write_file(dir / "train/n02/a.jpg", jpeg);
    write_file(dir / "train/n01/z.Jpeg", jpeg);
    write_file(dir / "train/n01/notes.txt", as_bytes("not an image"));
    write_file(dir / "train/n01/.hidden.JPEG", jpeg);
    write_file(dir / "train/n03/c.JPEG", jpeg);
    write_file(dir / "val/n03/v1.JPEG", jpeg);
    write_file(dir / "val/n01/v0.JPEG", jpeg);
}

}  // namespace

TEST_CASE("classes are sorted by name and images listed in name order") {
    TempDir dir;
    make_tree(dir);
    ImageFolderDataset train(dir.path(), "train");
    CHECK(train.classes() == std::vector<std::string>{"n01", "n02", "n03"});
    CHECK(train.num_classes() == 3);
    REQUIRE(train.size() == 4);
    CHECK(train.path(0) == dir / "train/n01/z.Jpeg");
    CHECK(train.path(1) == dir / "train/n02/a.jpg");
    CHECK(train.path(2) == dir / "train/n02/b.JPEG");
    CHECK(train.path(3) == dir / "train/n03/c.JPEG");
    CHECK(std::vector<int>{train.label(0), train.label(1), train.label(2), train.label(3)} ==
          std::vector<int>{0, 1, 1, 2});
    EncodedSample sample = train.load(2);
    CHECK(sample.label == 1);
    CHECK(sample.source == dir / "train/n02/b.JPEG");
    CHECK(sample.bytes == trellis::test::test_jpeg(8, 8));
    CHECK_THAT(train.describe(), Catch::Contains("4 images, 3 classes"));
}

TEST_CASE("the validation split is labelled with the training split's classes") {
    TempDir dir;
    make_tree(dir);
    ImageFolderDataset val(dir.path(), "val");
    CHECK(val.num_classes() == 3);  // n02 has no validation images but keeps its label
    REQUIRE(val.size() == 2);
    CHECK(val.label(0) == 0);
    CHECK(val.label(1) == 2);

    write_file(dir / "val/n99/x.JPEG", trellis::test::test_jpeg(8, 8));
    CHECK_THROWS_WITH(ImageFolderDataset(dir.path(), "val"),
                      Catch::Contains(dir / "val/n99") && Catch::Contains("not in"));
}

TEST_CASE("missing or empty trees are refused before training starts") {
    TempDir dir;
    CHECK_THROWS_WITH(ImageFolderDataset(dir.path(), "train"),
                      Catch::Contains(dir / "train") && Catch::Contains("no such folder"));
    std::filesystem::create_directories(dir / "train");
    CHECK_THROWS_WITH(ImageFolderDataset(dir.path(), "train"), Catch::Contains("no class folders"));
    std::filesystem::create_directories(dir / "train/n01");
    write_file(dir / "train/n01/readme.txt", as_bytes("x"));
    CHECK_THROWS_WITH(ImageFolderDataset(dir.path(), "train"), Catch::Contains("no .JPEG/.jpg/.jpeg files"));
}

TEST_CASE("a file that vanished is a DataError naming it") {
    TempDir dir;
    make_tree(dir);
    ImageFolderDataset train(dir.path(), "train");
    std::filesystem::remove(dir / "train/n03/c.JPEG");
    CHECK_THROWS_WITH(train.load(3), Catch::Contains(dir / "train/n03/c.JPEG"));
}

TEST_CASE("JPEG extensions in any case") {
    CHECK(has_jpeg_extension("a.JPEG"));
    CHECK(has_jpeg_extension("a.jpeg"));
    CHECK(has_jpeg_extension("a.JpG"));
    CHECK_FALSE(has_jpeg_extension("a.png"));
    CHECK_FALSE(has_jpeg_extension("jpeg"));
    CHECK_FALSE(has_jpeg_extension("a.jpeg.bak"));
}
