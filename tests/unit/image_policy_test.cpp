// SPDX-License-Identifier: Apache-2.0
// The image policy for registry references, archives and squashfs files
// (agent/image/policy.hpp): every rule, and each refusal naming its setting and
// the file it comes from. Bundles and .sif files are agent_test.cpp's.
#include "tests/catch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/image/policy.hpp"
#include "fixtures.hpp"

using namespace trellis::agent;
namespace fs = std::filesystem;

using trellis::test::Scratch;

namespace {

trellis::config::ContainerConfig site() {
    trellis::config::ContainerConfig config;
    config.origin = "/etc/trellis/trellis.toml";
    return config;
}

const std::string digest = "sha256:" + std::string(64, 'c');

}  // namespace

TEST_CASE("registry images: a host[:port] entry allows its whole registry, exactly") {
    auto config = site();
    config.allowed_registries = {"127.0.0.1:5000"};
    auto checked = check_image("docker://127.0.0.1:5000/team/x:v1", config);
    CHECK(checked.kind == ImageKind::registry);
    CHECK(checked.path.empty());
    CHECK(checked.reference.registry_path() == "127.0.0.1:5000/team/x");
    CHECK(checked.reference.tag == "v1");
    CHECK(check_image("docker://127.0.0.1:5000/x@" + digest, config).reference.digest == digest);
    // Another port, or the host without it, is another registry.
    CHECK_THROWS_AS(check_image("docker://127.0.0.1:5001/x:v1", config), PolicyError);
    CHECK_THROWS_AS(check_image("docker://127.0.0.1/x:v1", config), PolicyError);
}

TEST_CASE("registry images: patterns match host[:port]/repository, '*' not crossing '/', tags ignored") {
    auto config = site();
    config.allowed_registries = {"nvcr.io/nvidia/*", "docker.io/library/busybox"};
    CHECK_NOTHROW(check_image("docker://nvcr.io/nvidia/pytorch:24.05-py3", config));
    CHECK_NOTHROW(check_image("docker://busybox", config));  // docker.io/library/busybox:latest
    CHECK_NOTHROW(check_image("docker://docker.io/library/busybox@" + digest, config));
    CHECK_THROWS_AS(check_image("docker://nvcr.io/nvidia/team/private:1", config), PolicyError);
    CHECK_THROWS_AS(check_image("docker://nvcr.io/other/pytorch:1", config), PolicyError);
    CHECK_THROWS_AS(check_image("docker://alpine", config), PolicyError);
    // A pattern cannot be fooled by a host that starts like an allowed one.
    CHECK_THROWS_AS(check_image("docker://nvcr.io.evil.example/nvidia/pytorch:1", config), PolicyError);
}

TEST_CASE("a refused registry image names allowed_registries, the file and what is accepted") {
    auto config = site();
    CHECK_THROWS_WITH(check_image("docker://127.0.0.1:5000/x:tag", config),
                      "image 'docker://127.0.0.1:5000/x:tag': registry repository '127.0.0.1:5000/x' is not allowed "
                      "on this cluster (allowed_registries in /etc/trellis/trellis.toml: none; accepted: a repository "
                      "matching one of those patterns, or any repository of a registry listed as host[:port])");
    config.allowed_registries = {"nvcr.io/nvidia/*", "ghcr.io"};
    CHECK_THROWS_WITH(check_image("docker://127.0.0.1:5000/x:tag", config),
                      Catch::Contains("allowed_registries in /etc/trellis/trellis.toml: nvcr.io/nvidia/*, ghcr.io;"));
    // insecure_registries allows nothing by itself.
    config.insecure_registries = {"127.0.0.1:5000"};
    CHECK_THROWS_WITH(check_image("docker://127.0.0.1:5000/x:tag", config), Catch::Contains("allowed_registries"));
}

TEST_CASE("insecure registries: exact host[:port] entries only") {
    auto config = site();
    config.insecure_registries = {"127.0.0.1:5000", "registry.lan"};
    CHECK(registry_is_insecure(parse_image_reference("docker://127.0.0.1:5000/x"), config));
    CHECK(registry_is_insecure(parse_image_reference("docker://registry.lan/team/x:1"), config));
    CHECK_FALSE(registry_is_insecure(parse_image_reference("docker://127.0.0.1:5001/x"), config));
    CHECK_FALSE(registry_is_insecure(parse_image_reference("docker://registry.lan:443/x"), config));
    CHECK_FALSE(registry_is_insecure(parse_image_reference("docker://busybox"), config));
}

TEST_CASE("a malformed reference is refused with the accepted forms") {
    auto config = site();
    config.allowed_registries = {"docker.io"};
    CHECK_THROWS_WITH(check_image("docker://Busybox", config), Catch::Contains("accepted: docker://"));
    CHECK_THROWS_AS(check_image("http://127.0.0.1:5000/x", config), PolicyError);
    CHECK_THROWS_WITH(check_image("oci-archive:x.tar", config), Catch::Contains("must be absolute"));
}

TEST_CASE("the user's own archives and squashfs files need allow_user_images") {
    Scratch scratch;
    auto home = scratch.make("home");
    auto archive = scratch.write("home/x.tar", "tar");
    auto squashfs = scratch.write("home/x.sqsh", "hsqs");
    auto config = site();
    for (const auto& image : {"oci-archive:" + archive, "docker-archive:" + archive, squashfs})
        CHECK_THROWS_WITH(check_image(image, config),
                          Catch::Contains("is a file of the user's own: not allowed on this cluster "
                                          "(allow_user_images = false in /etc/trellis/trellis.toml, and "
                                          "allowed_images: none; accepted: an administrator's file matching "
                                          "allowed_images, or any file of the user's own with "
                                          "allow_user_images = true)"));
    config.allow_user_images = true;
    auto checked = check_image("oci-archive:" + archive, config);
    CHECK(checked.kind == ImageKind::archive);
    CHECK(checked.path == archive);
    CHECK(checked.reference.kind == ReferenceKind::oci_archive);
    CHECK(check_image("docker-archive:" + archive, config).reference.kind == ReferenceKind::docker_archive);
    auto sqsh = check_image(squashfs, config);
    CHECK(sqsh.kind == ImageKind::squashfs);
    CHECK(sqsh.settings.empty());
    // Its settings: the .json beside it.
    scratch.write("home/x.json", R"({"Env":["A=1"]})");
    CHECK(check_image(squashfs, config).settings == (home / "x.json").string());
    // Not a regular file, or missing.
    fs::create_directories(home / "dir.tar");
    CHECK_THROWS_WITH(check_image("oci-archive:" + (home / "dir.tar").string(), config),
                      Catch::Contains("is not a regular file"));
    CHECK_THROWS_WITH(check_image("oci-archive:" + (home / "none.tar").string(), config),
                      Catch::Contains("does not exist"));
    CHECK_THROWS_WITH(check_image("oci-archive:" + (home / ".." / "home" / "x.tar").string(), config),
                      Catch::Contains("'..' is not accepted"));
}

TEST_CASE("a user's image is theirs or root's: links resolved, another user's file refused") {
    Scratch scratch;
    auto home = scratch.make("home");
    auto other = scratch.write("home/other.sqsh", "hsqs");
    scratch.write("home/plain.bin", "not a squashfs");
    fs::create_symlink(home / "plain.bin", home / "disguised.sqsh");
    auto config = site();
    config.allow_user_images = true;
    CHECK_THROWS_WITH(check_image((home / "disguised.sqsh").string(), config),
                      Catch::Contains("which is not a .sqsh file"));
    if (::getuid() != 0) return;  // handing a file to another user needs root
    REQUIRE(::chown(other.c_str(), 4242, 4242) == 0);
    CHECK_THROWS_WITH(check_image(other, config),
                      Catch::Contains("belongs to uid 4242, not to uid 0 who runs it (accepted: the user's own files, "
                                      "or root's)"));
    // Through a link of the user's own: the file it leads to decides.
    fs::create_symlink(other, home / "mine.sqsh");
    CHECK_THROWS_WITH(check_image((home / "mine.sqsh").string(), config), Catch::Contains("belongs to uid 4242"));
    // A settings file of another user beside the user's image is refused too.
    auto own = scratch.write("home/own.sqsh", "hsqs");
    auto settings = scratch.write("home/own.json", "{}");
    REQUIRE(::chown(settings.c_str(), 4242, 4242) == 0);
    CHECK_THROWS_WITH(check_image(own, config), Catch::Contains("belongs to uid 4242"));
}

TEST_CASE("an administrator's squashfs matches allowed_images and must be root's, in root's folders") {
    if (::getuid() != 0) return;  // an image only root can change takes root to make
    Scratch scratch;
    auto images = scratch.make("images");
    auto squashfs = scratch.write("images/train.sqsh", "hsqs");
    scratch.write("images/train.json", "{}");
    auto config = site();
    config.allowed_images = {images.string() + "/*.sqsh"};
    auto checked = check_image(squashfs, config);  // allow_user_images is false
    CHECK(checked.kind == ImageKind::squashfs);
    CHECK(checked.settings == (images / "train.json").string());
    // A folder anyone may change: anyone could swap the image under another user's step.
    ::chmod(images.c_str(), 0777);
    CHECK_THROWS_WITH(check_image(squashfs, config),
                      Catch::Contains("must belong to root and be writable by root alone"));
    ::chmod(images.c_str(), 0755);
    // The settings beside it are held to the same rule.
    REQUIRE(::chown((images / "train.json").c_str(), 4242, 4242) == 0);
    CHECK_THROWS_WITH(check_image(squashfs, config), Catch::Contains("train.json"));
}
