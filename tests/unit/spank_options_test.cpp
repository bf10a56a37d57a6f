// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include "common/error.hpp"
#include "spank/options.hpp"

using namespace trellis::spank;
using trellis::topology::Policy;

TEST_CASE("--trellis-bind values") {
    UserChoices c;
    parse_bind_option("none", c);
    CHECK(c.policy == Policy::none);
    CHECK_FALSE(c.verbose);
    parse_bind_option("closest,verbose", c);
    CHECK(c.policy == Policy::closest);
    CHECK(c.verbose);
    UserChoices v;
    parse_bind_option("verbose", v);
    CHECK_FALSE(v.policy);
    CHECK(v.verbose);
    for (const char* bad : {"", "nearest", "closest,", ",", "closest,loud", "CLOSEST"})
        CHECK_THROWS_WITH(parse_bind_option(bad, c),
                          Catch::Contains("accepted: closest or none, optionally followed by ,verbose"));
}

TEST_CASE("--trellis-hca values") {
    UserChoices c;
    parse_hca_option("mlx5_0:1,mlx5_3", c);
    REQUIRE(c.hcas);
    REQUIRE(c.hcas->size() == 2);
    CHECK((*c.hcas)[0].name == "mlx5_0");
    CHECK((*c.hcas)[0].port == 1);
    CHECK((*c.hcas)[1].port == 0);
    parse_hca_option("auto", c);
    CHECK_FALSE(c.hcas);
    CHECK_THROWS_AS(parse_hca_option("", c), trellis::UsageError);
    CHECK_THROWS_AS(parse_hca_option("mlx5_0,", c), trellis::UsageError);
    CHECK_THROWS_WITH(parse_hca_option("mlx5_0:one", c), Catch::Contains("accepted: NAME or NAME:PORT"));
}

TEST_CASE("TRELLIS_VERBOSE values") {
    UserChoices c;
    parse_verbose_value("yes", c);
    CHECK(c.verbose);
    parse_verbose_value("0", c);
    CHECK_FALSE(c.verbose);
    CHECK_THROWS_WITH(parse_verbose_value("loud", c), Catch::Contains("accepted: 1, yes, true, on"));
}

TEST_CASE("--trellis-image forms: registry references, archives and paths; anything else with the accepted forms") {
    UserChoices c;
    for (const char* image : {"docker://127.0.0.1:5000/x:tag", "docker://busybox", "oci-archive:/home/u/x.tar",
                              "docker-archive:/home/u/x.tar", "/images/train.sqsh", "/images/bundle"}) {
        parse_image_option(image, c);
        CHECK(c.image == image);
    }
    CHECK_THROWS_WITH(parse_image_option("busybox", c), Catch::Contains("accepted: docker://[HOST[:PORT]/]REPOSITORY"));
    CHECK_THROWS_WITH(parse_image_option("https://x/y", c), Catch::Contains("unknown transport"));
    CHECK_THROWS_WITH(parse_image_option("docker://x/y\nerror: forged", c), Catch::Contains("control character"));
}
