// SPDX-License-Identifier: Apache-2.0
// IDX files (plain and gzip), the IDX dataset, and the grey-image transform.
#include "tests/catch.hpp"
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "trainer/data/data_error.hpp"
#include "trainer/data/grey_transform.hpp"
#include "trainer/data/idx_dataset.hpp"
#include "trainer/data/idx_file.hpp"

using namespace trellis::data;
namespace fs = std::filesystem;

namespace {

struct Folder {
    fs::path path;
    Folder() {
        char name[] = "/tmp/trellis-idx-XXXXXX";
        path = ::mkdtemp(name);
    }
    ~Folder() { fs::remove_all(path); }
};

// An IDX file's bytes: magic (type 0x08), dims big-endian, then `values`.
std::vector<std::uint8_t> idx_bytes(std::vector<std::uint32_t> dims, std::vector<std::uint8_t> values,
                                    std::uint8_t type = 0x08) {
    std::vector<std::uint8_t> bytes{0, 0, type, std::uint8_t(dims.size())};
    for (auto d : dims)
        for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(std::uint8_t(d >> shift));
    bytes.insert(bytes.end(), values.begin(), values.end());
    return bytes;
}

void write_plain(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_gzip(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
    gzFile file = gzopen(path.c_str(), "wb");
    REQUIRE(file);
    REQUIRE(gzwrite(file, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
    gzclose(file);
}

// Three 2x3 images with pixel values image * 10 + position, labels 0, 2, 1.
void write_split(const fs::path& folder, const std::string& prefix, bool gzip) {
    std::vector<std::uint8_t> pixels;
    for (int image = 0; image < 3; ++image)
        for (int p = 0; p < 6; ++p) pixels.push_back(std::uint8_t(image * 10 + p));
    auto write = gzip ? write_gzip : write_plain;
    std::string suffix = gzip ? ".gz" : "";
    write(folder / (prefix + "-images-idx3-ubyte" + suffix), idx_bytes({3, 2, 3}, pixels));
    write(folder / (prefix + "-labels-idx1-ubyte" + suffix), idx_bytes({3}, {0, 2, 1}));
}

}  // namespace

TEST_CASE("IDX files read alike plain and gzip-compressed") {
    Folder f;
    write_split(f.path, "train", true);
    write_split(f.path, "t10k", false);
    IdxDataset train(f.path.string(), "train"), eval(f.path.string(), "t10k", 3);
    CHECK(train.size() == 3);
    CHECK(train.num_classes() == 3);
    CHECK(train.rows() == 2);
    CHECK(train.columns() == 3);
    auto sample = eval.load(1);
    CHECK(sample.encoding == SampleEncoding::grey);
    CHECK(sample.label == 2);
    CHECK(sample.bytes == std::vector<std::uint8_t>{10, 11, 12, 13, 14, 15});
    CHECK(sample.source.find("t10k-images-idx3-ubyte:1") != std::string::npos);
    // The mean of 0..5, 10..15, 20..25 is 12.5 (of 255).
    CHECK(train.statistics().mean[1] == Approx(12.5 / 255));
}

TEST_CASE("a corrupt IDX file is an error naming the file and what was expected") {
    Folder f;
    auto path = f.path / "bad";
    write_plain(path, {1, 2, 3, 4});
    CHECK_THROWS_WITH(read_idx(path.string(), 1), Catch::Contains("bad: not an IDX file"));
    write_plain(path, idx_bytes({2}, {0, 0, 0, 0, 0, 0, 0, 0}, 0x0D));
    CHECK_THROWS_WITH(read_idx(path.string(), 1), Catch::Contains("type 0x0D, expected 0x08"));
    write_plain(path, idx_bytes({2, 2}, {1, 2, 3, 4}));
    CHECK_THROWS_WITH(read_idx(path.string(), 3), Catch::Contains("2 dimensions, expected 3"));
    write_gzip(path, idx_bytes({10}, {1, 2, 3}));
    CHECK_THROWS_WITH(read_idx(path.string(), 1), Catch::Contains("truncated: 3 of the 10 values"));
    write_plain(path, idx_bytes({2}, {1, 2, 3}));
    CHECK_THROWS_WITH(read_idx(path.string(), 1), Catch::Contains("longer than the 2 values"));
    CHECK_THROWS_WITH(read_idx((f.path / "absent").string(), 1), Catch::Contains("absent: cannot open"));

    write_split(f.path, "train", false);
    write_plain(f.path / "train-labels-idx1-ubyte", idx_bytes({2}, {0, 1}));
    CHECK_THROWS_WITH(IdxDataset(f.path.string(), "train"),
                      Catch::Contains("3 images but") && Catch::Contains("2 labels (expected as many)"));
    write_split(f.path, "t10k", false);
    CHECK_THROWS_WITH(IdxDataset(f.path.string(), "t10k", 2), Catch::Contains("label 2, expected below 2"));

    write_plain(f.path / "wide-images-idx3-ubyte", idx_bytes({1, 1, 65536}, std::vector<std::uint8_t>(65536)));
    write_plain(f.path / "wide-labels-idx1-ubyte", idx_bytes({1}, {0}));
    CHECK_THROWS_WITH(IdxDataset(f.path.string(), "wide"),
                      Catch::Contains("wide-images-idx3-ubyte: images of 1x65536, expected at most 65535 on a side"));
}

TEST_CASE("a grey image is centred on the canvas, on all three channels, shifted and mirrored only in training") {
    EncodedSample sample;
    sample.encoding = SampleEncoding::grey;
    sample.width = 2, sample.height = 2;
    sample.bytes = {255, 0, 0, 0};  // white in the top left corner
    ChannelStatistics plain;
    plain.mean.fill(0), plain.std.fill(1);
    std::vector<float> out(4 * 4 * 3);
    transform_grey(sample, TransformKind::evaluation, 4, 1, PixelOutput::normalised(out.data(), plain));
    auto at = [&](int y, int x, int c) { return out[std::size_t((y * 4 + x) * 3 + c)]; };
    CHECK(at(1, 1, 0) == 1.0f);
    CHECK(at(1, 1, 2) == 1.0f);
    CHECK(at(0, 0, 0) == 0.0f);  // the black border
    CHECK(at(1, 2, 0) == 0.0f);
    std::vector<std::uint8_t> bytes(4 * 4 * 3);  // as bytes: the values themselves
    transform_grey(sample, TransformKind::evaluation, 4, 1, PixelOutput::raw(bytes.data()));
    for (std::size_t i = 0; i < bytes.size(); ++i) CHECK(bytes[i] == (i / 3 == 5 ? 255 : 0));

    // Training: the white pixel (at column 5 + dx, or 6 - dx mirrored, of a 12-pixel canvas,
    // with shifts dx and dy in -4..4) lands on 9 rows and 10 columns over many seeds, where
    // shifts alone would give 9; it is never lost.
    std::vector<float> big(12 * 12 * 3);
    std::set<int> rows, columns;
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
        transform_grey(sample, TransformKind::training, 12, seed, PixelOutput::normalised(big.data(), plain));
        float total = 0;
        for (int y = 0; y < 12; ++y)
            for (int x = 0; x < 12; ++x)
                if (float value = big[std::size_t((y * 12 + x) * 3)]; value > 0) {
                    total += value;
                    rows.insert(y), columns.insert(x);
                }
        CHECK(total == 1.0f);
    }
    CHECK(rows == std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 9});
    CHECK(columns == std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}
