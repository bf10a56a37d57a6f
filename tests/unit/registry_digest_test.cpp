// SPDX-License-Identifier: Apache-2.0
// The user's record of resolved digests (agent/image/registry_digest.hpp): used within
// digest_lifetime only, one line per reference, rewritten whole; a pinned reference asks no
// one. The lookups themselves are tests/container/digest_test.sh's, against a real registry.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/image/policy.hpp"
#include "agent/image/registry_digest.hpp"
#include "fixtures.hpp"

using namespace trellis::agent;
using trellis::test::Scratch;

namespace {
const std::string first = "sha256:" + std::string(64, 'a');
const std::string second = "sha256:" + std::string(64, 'b');

std::string text_of(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}
}  // namespace

TEST_CASE("a remembered digest is used within its lifetime only, the latest for its reference") {
    Scratch scratch;
    std::string record = (scratch.path / "cache/trellis/digests").string();
    auto x = parse_image_reference("docker://127.0.0.1:5000/x:tag");
    auto y = parse_image_reference("docker://127.0.0.1:5000/y:tag");
    CHECK(remembered_digest(record, x, 3600, 1000).empty());  // no record yet
    remember_digest(record, x, first, 3600, 1000);
    struct stat info {};
    REQUIRE(::stat((scratch.path / "cache/trellis").c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    CHECK(remembered_digest(record, x, 3600, 1000 + 3600) == first);
    CHECK(remembered_digest(record, x, 3600, 1000 + 3601).empty());
    CHECK(remembered_digest(record, y, 3600, 1000).empty());
    // A clock that went back does not make an old line new.
    CHECK(remembered_digest(record, x, 3600, 999).empty());
    remember_digest(record, y, second, 3600, 2000);
    remember_digest(record, x, second, 3600, 3000);
    CHECK(remembered_digest(record, x, 3600, 3000) == second);
    CHECK(remembered_digest(record, y, 3600, 3000) == second);
    CHECK(text_of(record) ==
          "2000 docker://127.0.0.1:5000/y:tag " + second + "\n3000 docker://127.0.0.1:5000/x:tag " + second + "\n");
    // Lines past the lifetime go at the next write; nothing is left half-written beside it.
    remember_digest(record, x, first, 3600, 9000);
    CHECK(text_of(record) == "9000 docker://127.0.0.1:5000/x:tag " + first + "\n");
    CHECK(std::distance(std::filesystem::directory_iterator(scratch.path / "cache/trellis"),
                        std::filesystem::directory_iterator()) == 1);
    // Garbage in the record is skipped, not believed.
    std::ofstream(record, std::ios::app) << "9001 docker://127.0.0.1:5000/x:tag sha256:zz\nnonsense\n";
    CHECK(remembered_digest(record, x, 3600, 9001) == first);
}

TEST_CASE("a pinned reference is its own digest, with no lookup and no program run") {
    trellis::config::ContainerConfig config;
    config.skopeo = "/nonexistent/skopeo";
    auto pinned = parse_image_reference("docker://127.0.0.1:5000/x@" + first);
    CHECK(resolve_digest(pinned, config) == first);
    // With a tag, the program is needed, and its absence is said clearly.
    auto tagged = parse_image_reference("docker://127.0.0.1:5000/x:tag");
    CHECK_THROWS_WITH(resolve_digest(tagged, config), Catch::Contains("cannot run skopeo '/nonexistent/skopeo'"));
}

TEST_CASE("checked_and_pinned refuses by policy before anything else") {
    trellis::config::ContainerConfig config;
    config.skopeo = "/nonexistent/skopeo";
    config.origin = "/etc/trellis/trellis.toml";
    CHECK_THROWS_AS(checked_and_pinned("docker://127.0.0.1:5000/x:tag", config), PolicyError);
    CHECK(checked_and_pinned("docker://127.0.0.1:5000/x@" + first, [&] {
              auto allowing = config;
              allowing.allowed_registries = {"127.0.0.1:5000"};
              return allowing;
          }()) == "docker://127.0.0.1:5000/x@" + first);
}

TEST_CASE("skopeo's failures are told by its status first, its words second") {
    using F = SkopeoFailure;
    // skopeo 1.15 and later exit 2 for an image that is not there, whatever the registry says.
    CHECK(classify_skopeo(2, "reading manifest v9 in 127.0.0.1:5000/x: something else") == F::not_found);
    CHECK(classify_skopeo(1, "reading manifest nope in 127.0.0.1:5000/x: manifest unknown: manifest unknown") ==
          F::not_found);
    CHECK(classify_skopeo(1,
                          "initializing source docker://127.0.0.1:5000/x:tag: reading manifest tag in "
                          "127.0.0.1:5000/x: unauthorized: authentication required") == F::unauthorized);
    // An unauthorized answer with status 2 (some registries say "not found" to strangers) is
    // still told as unauthorized when skopeo's words say so.
    CHECK(classify_skopeo(2, "requested access to the resource is denied") == F::unauthorized);
    CHECK(
        classify_skopeo(1, "reading manifest v1 in registry.example/x: denied: Your authorization token has expired") ==
        F::unauthorized);
    CHECK(classify_skopeo(1,
                          "pinging container registry 127.0.0.1:5000: Get \"https://127.0.0.1:5000/v2/\": http: "
                          "server gave HTTP response to HTTPS client") == F::plain_http);
    CHECK(classify_skopeo(1,
                          "Get \"https://127.0.0.1:5000/v2/\": tls: failed to verify certificate: x509: "
                          "certificate signed by unknown authority") == F::certificate);
    CHECK(classify_skopeo(1, "Get \"https://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused") ==
          F::unreachable);
    CHECK(classify_skopeo(1, "writing blob: write /c/oci/blobs/x: no space left on device") == F::no_space);
    // A local "permission denied" is not the registry refusing access.
    CHECK(classify_skopeo(1, "open /c/oci/index.json: permission denied") == F::other);
}

TEST_CASE("skopeo's reason is its last log line's message, unquoted and kept short") {
    CHECK(
        skopeo_reason("time=\"2026-11-28T10:00:00Z\" level=fatal msg=\"Error parsing image name \\\"x\\\": bad\"\n") ==
        "Error parsing image name \"x\": bad");
    CHECK(skopeo_reason("first line\nsecond line\n") == "second line");
    CHECK(skopeo_reason(std::string(1000, 'a')).size() == 403);
}
