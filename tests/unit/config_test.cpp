// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include <cstdio>
#include <fstream>

#include "fixtures.hpp"
#include "config/config.hpp"
#include "agent/binding/node_paths.hpp"

using namespace trellis::agent;
using namespace trellis::config;
using trellis::agent::path_for_node;
using trellis::topology::Policy;

TEST_CASE("the shipped etc/trellis.toml parses to the defaults") {
    Config config = load_config({"config=" + trellis::test::source_dir() + "/etc/trellis.toml"}, "");
    BindingConfig defaults;
    CHECK(config.binding.policy == Policy::closest);
    CHECK(config.binding.topology_xml.empty());
    CHECK(config.binding.require_active);
    CHECK_FALSE(config.binding.smt);
    CHECK(config.binding.exported == defaults.exported);
    CHECK(config.container.apptainer == "/usr/bin/apptainer");
    // The registry, cache and CDI keys it documents hold their defaults.
    trellis::config::ContainerConfig container;
    CHECK(config.container.allowed_registries.empty());
    CHECK(config.container.insecure_registries.empty());
    CHECK(config.container.allow_user_images == container.allow_user_images);
    CHECK(config.container.digest_lifetime == container.digest_lifetime);
    CHECK(config.container.image_cache == container.image_cache);
    CHECK(config.container.image_cache_gib == container.image_cache_gib);
    CHECK(config.container.cdi_dirs == container.cdi_dirs);
    CHECK(config.container.allowed_cdi_hooks.empty());
    CHECK(config.container.skopeo == container.skopeo);
    CHECK(config.container.umoci == container.umoci);
    CHECK(config.container.mksquashfs == container.mksquashfs);
    CHECK(config.container.squashfuse == container.squashfuse);
}

TEST_CASE("every key is read") {
    Config config = parse_config_text(R"(
[binding]
policy = "none"
topology_xml = "/etc/trellis/%n.xml"
hca_include = ["mlx5_*"]
hca_exclude = ["mlx5_bond*", "mlx5_9"]
require_active = false
smt = true
export = ["NCCL_IB_HCA", "OMP_NUM_THREADS"]

[container]
runtime = "oci"
allowed_images = ["/images/*.sif"]
allowed_mounts = ["/scratch"]
)",
                                      "test.toml");
    CHECK(config.binding.policy == Policy::none);
    CHECK(config.binding.topology_xml == "/etc/trellis/%n.xml");
    CHECK(config.binding.hca_include == std::vector<std::string>{"mlx5_*"});
    CHECK(config.binding.hca_exclude.size() == 2);
    CHECK_FALSE(config.binding.require_active);
    CHECK(config.binding.smt);
    CHECK(config.binding.exported == std::vector<std::string>{"NCCL_IB_HCA", "OMP_NUM_THREADS"});
    CHECK(config.container.allowed_mounts == std::vector<std::string>{"/scratch"});
}

TEST_CASE("bad files are refused naming file, line and key") {
    CHECK_THROWS_WITH(parse_config_text("[binding]\n\npolicy = \"nearest\"\n", "a.toml"),
                      "a.toml:3: [binding] key 'policy': unknown binding policy 'nearest' "
                      "(accepted: closest, none)");
    CHECK_THROWS_WITH(parse_config_text("[binding]\ncolour = 1\n", "a.toml"),
                      Catch::StartsWith("a.toml:2: [binding] key 'colour' is unknown (accepted: export, "));
    CHECK_THROWS_WITH(parse_config_text("[binding]\nsmt = \"maybe\"\n", "a.toml"),
                      Catch::StartsWith("a.toml:2: [binding] key 'smt': must be true or false"));
    // A string where TOML has a boolean or a list is refused, not read as plugstack.conf would.
    CHECK_THROWS_WITH(parse_config_text("[binding]\nsmt = \"yes\"\n", "a.toml"),
                      Catch::Contains("without quotes (a boolean, not the string \"yes\")"));
    CHECK_THROWS_WITH(parse_config_text("[binding]\nhca_exclude = \"mlx5_bond*\"\n", "a.toml"),
                      Catch::Contains("key 'hca_exclude': must be a list of glob patterns in brackets, "
                                      "e.g. [\"mlx5_bond*\"], not a string"));
    CHECK_THROWS_WITH(parse_config_text("[binding]\npolicy = closest\n", "a.toml"),
                      Catch::StartsWith("a.toml:2: not valid TOML (") &&
                          Catch::Contains("strings in double quotes (policy = \"closest\")"));
    CHECK_THROWS_WITH(parse_config_text("[binding]\nsmt = 1\n", "a.toml"),
                      "a.toml:2: [binding] key 'smt': must be true or false");
    CHECK_THROWS_WITH(parse_config_text("[binding]\nhca_include = [1, 2]\n", "a.toml"),
                      Catch::Contains("a.toml:2: [binding] key 'hca_include': must be a list"));
    CHECK_THROWS_WITH(parse_config_text("[binding]\nexport = [\"PATH\"]\n", "a.toml"),
                      Catch::Contains("'PATH' is not a variable trellis sets"));
    CHECK_THROWS_WITH(parse_config_text("[bindings]\n", "a.toml"),
                      "a.toml:1: unknown table [bindings] (accepted: [binding], [container], [wireup])");
    CHECK_THROWS_WITH(parse_config_text("policy = \"none\"\n", "a.toml"),
                      Catch::StartsWith("a.toml:1: unknown key 'policy'"));
    CHECK_THROWS_WITH(parse_config_text("[container]\nsandbox = true\n", "a.toml"), Catch::Contains("sandbox"));
    CHECK_THROWS_WITH(parse_config_text("[binding\npolicy=1\n", "a.toml"), Catch::StartsWith("a.toml:1: "));
}

TEST_CASE("plugstack.conf arguments override the file") {
    std::string path = "spank_config_test.toml";
    {
        std::ofstream out(path);
        out << "[binding]\npolicy = \"none\"\nsmt = true\n";
    }
    Config config =
        load_config({"config=" + path, "policy=closest", "hca_exclude=mlx5_2,mlx5_3", "require_active=no"}, "");
    CHECK(config.binding.policy == Policy::closest);
    CHECK(config.binding.smt);
    CHECK(config.binding.hca_exclude == std::vector<std::string>{"mlx5_2", "mlx5_3"});
    CHECK_FALSE(config.binding.require_active);
    CHECK(config.path == path);

    CHECK_THROWS_WITH(load_config({"config=" + path, "colour=red"}, ""),
                      Catch::StartsWith("plugstack.conf argument 'colour=red': unknown key (accepted: config, "));
    CHECK_THROWS_WITH(load_config({"smt=perhaps"}, "/nonexistent/default.toml"),
                      "plugstack.conf argument 'smt=perhaps': must be true or false");
    CHECK_THROWS_WITH(load_config({"verbose"}, ""),
                      Catch::StartsWith("plugstack.conf argument 'verbose' is not key=value"));
    std::remove(path.c_str());
}

TEST_CASE("a missing default file means defaults; a missing named file is an error") {
    Config config = load_config({}, "/nonexistent/trellis.toml");
    CHECK(config.path.empty());
    CHECK(config.binding.policy == Policy::closest);
    CHECK_THROWS_WITH(load_config({"config=/nonexistent/t.toml"}, ""),
                      Catch::StartsWith("/nonexistent/t.toml: cannot read the trellis configuration"));
}

TEST_CASE("per-node topology files with %n") {
    std::string dir = trellis::test::source_dir() + "/tests/fixtures/topology/";
    CHECK(path_for_node("", "n1").empty());
    CHECK(path_for_node("/x/fixed.xml", "n1") == "/x/fixed.xml");
    CHECK(path_for_node(dir + "%n.xml", "no-hca-2gpu") == dir + "no-hca-2gpu.xml");
    CHECK(path_for_node(dir + "%n.xml", "n1").empty());  // no file of its own: live
}

TEST_CASE("the container section: namespaces tasks may join, agent and Apptainer paths; old keys still load") {
    Config config = parse_config_text(R"(
[container]
runtime = "oci"
namespaces = ["mount", "ipc"]
agent = "/opt/trellis/bin/trellis-agent"
apptainer = "/opt/apptainer/bin/apptainer"
run_dir = "/var/run/trellis"
)",
                                      "c.toml");
    CHECK(config.container.namespaces == std::vector<std::string>{"mount", "ipc"});
    CHECK(config.container.agent == "/opt/trellis/bin/trellis-agent");
    CHECK(config.container.apptainer == "/opt/apptainer/bin/apptainer");
    CHECK_THROWS_WITH(parse_config_text("[container]\napptainer = \"apptainer\"\n", "c.toml"),
                      Catch::Contains("is not an absolute path"));
    CHECK_THROWS_WITH(parse_config_text("[container]\nnamespaces = [\"mount\", \"pid\"]\n", "c.toml"),
                      Catch::Contains("'pid' is not a namespace a task may join"));
    CHECK_THROWS_WITH(parse_config_text("[container]\nnamespaces = [\"ipc\"]\n", "c.toml"),
                      Catch::Contains("must include \"mount\""));
    CHECK_THROWS_WITH(parse_config_text("[container]\nagent = \"trellis-agent\"\n", "c.toml"),
                      Catch::Contains("is not an absolute path"));
}
