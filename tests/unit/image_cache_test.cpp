// SPDX-License-Identifier: Apache-2.0
// The node cache's protocol (agent/image/cache.hpp, cache_entry.hpp) in a folder of
// the test's own, with no root and no tools: an entry publishes by rename or leaves nothing,
// a cut image is seen as damaged, eviction takes the least recently used image no one holds,
// an image srun sent is taken only whole.
// The checks of the node's cache top and the imports themselves are
// tests/container/import_test.sh's.
#include "tests/catch.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/image/broadcast.hpp"
#include "agent/image/cache_entry.hpp"
#include "agent/image/cache.hpp"
#include "fixtures.hpp"

using namespace trellis::agent;
using trellis::test::Scratch;

namespace {

const std::string first = "sha256:" + std::string(64, 'a');
const std::string second = "sha256:" + std::string(64, 'b');

// A file that passes as a squashfs of `bytes` bytes: the magic, and its size at byte 40.
std::string squashfs_of(std::size_t bytes) {
    std::string data(bytes, '\0');
    data.replace(0, 4, "hsqs");
    for (int i = 0; i < 8; ++i) data[40 + i] = char((std::uint64_t(bytes) >> (8 * i)) & 0xff);
    return data;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

void publish(const ImageCache& cache, const std::string& digest, std::size_t bytes) {
    CacheEntry entry(cache, digest);
    entry.make_tmp();
    write(entry.tmp_path(CacheEntry::image_file), squashfs_of(bytes));
    write(entry.tmp_path(CacheEntry::settings_file), "{}");
    entry.finalize();
}

}  // namespace

TEST_CASE("an entry publishes its image and settings by rename, and leaves no temporaries") {
    Scratch scratch;
    auto cache = ImageCache::own_folder(scratch.path.string());
    std::string hex(64, 'a');
    {
        CacheEntry entry(cache, first);
        CHECK_FALSE(entry.exists());
        entry.make_tmp();
        write(entry.tmp_path(CacheEntry::image_file), squashfs_of(4096));
        write(entry.tmp_path(CacheEntry::settings_file), "{\"config\":{}}");
        CHECK_FALSE(cache.has(first));  // nothing is published before finalize
        entry.finalize();
        CHECK(entry.exists());
    }
    CHECK(cache.has(first));
    CHECK(cache.damage(first).empty());
    CHECK(std::filesystem::exists(scratch.path / (hex + ".sqsh")));
    CHECK(std::filesystem::exists(scratch.path / (hex + ".json")));
    CHECK_FALSE(std::filesystem::exists(scratch.path / (hex + ".tmp")));
    CHECK(cache.bytes() >= 4096);
}

TEST_CASE("an entry that is not finalized takes its temporaries with it, and a dead import's are cleared") {
    Scratch scratch;
    auto cache = ImageCache::own_folder(scratch.path.string());
    std::string hex(64, 'a');
    {
        CacheEntry entry(cache, first);
        entry.make_tmp();
        std::filesystem::create_directories(entry.tmp_path("bundle/rootfs/locked"));
        ::chmod(entry.tmp_path("bundle/rootfs/locked").c_str(), 0);  // as an image may have it
        write(entry.tmp_path(CacheEntry::image_file), "half");
    }
    CHECK_FALSE(std::filesystem::exists(scratch.path / (hex + ".tmp")));
    CHECK_FALSE(cache.has(first));
    // Left by a killed import (no destructor ran): the next entry for the digest clears it.
    std::filesystem::create_directories(scratch.path / (hex + ".tmp/bundle"));
    CacheEntry next(cache, first);
    CHECK_FALSE(std::filesystem::exists(scratch.path / (hex + ".tmp")));
    // finalize without the files says what is missing and publishes nothing.
    next.make_tmp();
    CHECK_THROWS_AS(next.finalize(), ImageImportError);
    CHECK_FALSE(cache.has(first));
}

TEST_CASE("a published image cut short, or that is no squashfs, is damaged") {
    Scratch scratch;
    auto cache = ImageCache::own_folder(scratch.path.string());
    publish(cache, first, 8192);
    std::string image = (scratch.path / (std::string(64, 'a') + ".sqsh")).string();
    std::filesystem::resize_file(image, 5000);
    CHECK(cache.damage(first) == "it has 5000 bytes of the 8192 its superblock names");
    write(image, "");
    CHECK(cache.damage(first) == "it is empty");
    write(image, std::string(100, 'x'));
    CHECK(cache.damage(first) == "it has no squashfs superblock");
    cache.remove_image(first);
    CHECK_FALSE(cache.has(first));
}

TEST_CASE("eviction takes the least recently used image that no one holds, never the one kept") {
    Scratch scratch;
    auto cache = ImageCache::own_folder(scratch.path.string());
    publish(cache, first, 4096);
    publish(cache, second, 4096);
    // first used long ago, second just now.
    timespec old[2] = {{1000, 0}, {1000, 0}};
    ::utimensat(cache.fd(), (std::string(64, 'a') + ".sqsh").c_str(), old, 0);
    cache.touch(second);
    {
        CacheLock in_use = cache.lock(first, false);  // a step uses it
        CHECK(cache.evict_oldest("") == second);
    }
    CHECK(cache.has(first));
    CHECK_FALSE(cache.has(second));
    CHECK(cache.evict_oldest(first).empty());  // the only one left is kept
    CHECK(cache.evict_oldest("") == first);
    CHECK(cache.evict_oldest("").empty());
}

TEST_CASE("an image srun sent for the step is taken whole, and only with its settings") {
    Scratch scratch;
    auto cache = ImageCache::own_folder(scratch.path.string());
    std::string hex(64, 'a');
    CHECK(sent_name(first, "7.0", ".sqsh") == hex + ".sent-7.0.sqsh");
    // The squashfs alone (the broadcast cut short before the settings): not taken.
    write(cache.path(sent_name(first, "7.0", ".sqsh")), squashfs_of(4096));
    {
        CacheEntry entry(cache, first);
        CHECK_FALSE(received_image(cache, entry, first, "7.0"));
    }
    CHECK_FALSE(cache.has(first));
    // Another step's files are not this step's.
    write(cache.path(sent_name(first, "7.0", ".json")), "{}");
    {
        CacheEntry entry(cache, first);
        CHECK_FALSE(received_image(cache, entry, first, "7.1"));
        CHECK(received_image(cache, entry, first, "7.0"));
    }
    CHECK(cache.has(first));
    CHECK(cache.damage(first).empty());
    CHECK_FALSE(std::filesystem::exists(cache.path(sent_name(first, "7.0", ".sqsh"))));
    CHECK_FALSE(std::filesystem::exists(scratch.path / (hex + ".tmp")));
}

TEST_CASE("sent files not taken go: the step's own, whole names only; another step's stay") {
    Scratch scratch;
    auto cache = ImageCache::own_folder(scratch.path.string());
    write(cache.path(sent_name(first, "7.0", ".sqsh")), "x");
    write(cache.path(sent_name(first, "7.0", ".json")), "x");
    write(cache.path(sent_name(first, "8.0", ".sqsh")), "x");
    write(cache.path(sent_name(first, "7.01", ".sqsh")), "x");  // another step's, though its name begins the same
    // sbcast -p keeps the staged file's old mtime: a file arriving now is not a day old.
    write(cache.path(sent_name(second, "9.0", ".json")), "x");
    struct timespec old[2] = {{0, UTIME_OMIT}, {std::time(nullptr) - 2 * 24 * 3600, 0}};
    ::utimensat(cache.fd(), sent_name(second, "9.0", ".json").c_str(), old, AT_SYMLINK_NOFOLLOW);
    publish(cache, first, 4096);
    remove_sent_files(cache, first, "7.0");
    CHECK_FALSE(std::filesystem::exists(cache.path(sent_name(first, "7.0", ".sqsh"))));
    CHECK_FALSE(std::filesystem::exists(cache.path(sent_name(first, "7.0", ".json"))));
    CHECK(std::filesystem::exists(cache.path(sent_name(first, "8.0", ".sqsh"))));  // a step still starting
    CHECK(std::filesystem::exists(cache.path(sent_name(first, "7.01", ".sqsh"))));
    CHECK(std::filesystem::exists(cache.path(sent_name(second, "9.0", ".json"))));
    CHECK(cache.has(first));
}

TEST_CASE("a step is named JOB.STEP in digits") {
    CHECK(is_step_name("4242.0"));
    CHECK_FALSE(is_step_name("4242"));
    CHECK_FALSE(is_step_name("4242.0/../x"));
    CHECK_FALSE(is_step_name(".0"));
    CHECK_FALSE(is_step_name("1.2.3"));
}
