// SPDX-License-Identifier: Apache-2.0
// Image references as --trellis-image takes them (agent/image/reference.hpp).
#include "tests/catch.hpp"

#include "agent/image/reference.hpp"
#include "common/error.hpp"

using namespace trellis::agent;

namespace {
const std::string digest = "sha256:" + std::string(64, 'a');
}

TEST_CASE("a registry reference without a host is Docker Hub's, a one-word repository library's, no tag latest") {
    auto ref = parse_image_reference("docker://busybox");
    CHECK(ref.kind == ReferenceKind::registry);
    CHECK(ref.registry_path() == "docker.io/library/busybox");
    CHECK(ref.tag == "latest");
    CHECK(ref.text() == "docker://docker.io/library/busybox:latest");
    CHECK(parse_image_reference("docker://nvidia/cuda:12.4").registry_path() == "docker.io/nvidia/cuda");
}

TEST_CASE("a first component with a dot, a port or localhost is the registry") {
    auto ref = parse_image_reference("docker://127.0.0.1:5000/team/x:v1");
    CHECK(ref.host == "127.0.0.1:5000");
    CHECK(ref.repository == "team/x");
    CHECK(ref.tag == "v1");
    CHECK(ref.text() == "docker://127.0.0.1:5000/team/x:v1");
    CHECK(parse_image_reference("docker://localhost/x").host == "localhost");
    CHECK(parse_image_reference("docker://nvcr.io/nvidia/pytorch:24.05-py3").host == "nvcr.io");
}

TEST_CASE("a digest pins the image; a tag beside it only names it") {
    auto ref = parse_image_reference("docker://127.0.0.1:5000/x:v1@" + digest);
    CHECK(ref.digest == digest);
    CHECK(ref.tag.empty());
    CHECK(ref.text() == "docker://127.0.0.1:5000/x@" + digest);
    auto pinned = parse_image_reference("docker://127.0.0.1:5000/x:v1").pinned(digest);
    CHECK(pinned.text() == "docker://127.0.0.1:5000/x@" + digest);
}

TEST_CASE("archives and paths") {
    CHECK(parse_image_reference("oci-archive:/data/x.tar").kind == ReferenceKind::oci_archive);
    CHECK(parse_image_reference("docker-archive:/data/x.tar").text() == "docker-archive:/data/x.tar");
    CHECK(parse_image_reference("/images/x.sqsh").is_squashfs_file());
    CHECK(parse_image_reference("/images/bundle").kind == ReferenceKind::path);
}

TEST_CASE("malformed references are refused with the accepted forms") {
    for (const char* bad : {"docker://", "docker://UPPER/case", "docker://x:", "docker://x@sha256:abc",
                            "docker://bad_host:99999/x", "oci-archive:relative.tar", "http://x/y", "relative/path",
                            "docker://x/../y", "docker://a b", "docker://x:-tag"}) {
        INFO(bad);
        CHECK_THROWS_WITH(parse_image_reference(bad), Catch::Contains("accepted: docker://"));
    }
}
