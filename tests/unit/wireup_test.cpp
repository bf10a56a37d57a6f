// SPDX-License-Identifier: Apache-2.0
// The frameworks' variables: what PyTorch's env:// reads and TensorFlow's TF_CONFIG, from a
// step's layout as Slurm describes it.
#include "tests/catch.hpp"

#include <nlohmann/json.hpp>

#include "agent/binding/wireup.hpp"

using namespace trellis::agent;

TEST_CASE("the wireup option") {
    CHECK(parse_wireup("torch").torch);
    CHECK_FALSE(parse_wireup("torch").tf);
    auto none = parse_wireup("none");
    CHECK_FALSE(none.torch);
    CHECK_FALSE(none.tf);
    auto both = parse_wireup("torch,tf:chief:ps=2");
    CHECK(both.torch);
    CHECK(both.tf);
    CHECK(both.tf_chief);
    CHECK(both.tf_ps == 2);
    CHECK_FALSE(parse_wireup("tf").torch);
    for (const char* bad : {"", "pytorch", "torch,", "tf:ps=0", "tf:boss", "none,torch", "torch,torch"})
        CHECK_THROWS_WITH(parse_wireup(bad), Catch::Contains("accepted"));
}

TEST_CASE("ranks to nodes as Slurm distributes them") {
    CHECK(rank_nodes("2(x2),1", "block") == std::vector<int>{0, 0, 1, 1, 2});
    CHECK(rank_nodes("2(x2),1", "") == std::vector<int>{0, 0, 1, 1, 2});
    CHECK(rank_nodes("2(x2),1", "cyclic:block") == std::vector<int>{0, 1, 2, 0, 1});
    CHECK(rank_nodes("2(x2)", "cyclic,pack") == std::vector<int>{0, 1, 0, 1});
    CHECK(rank_nodes("2(x2)", "nopack") == std::vector<int>{0, 0, 1, 1});
    CHECK_THROWS_WITH(rank_nodes("2", "arbitrary"), Catch::Contains("accepted: block, cyclic"));
    CHECK_THROWS_WITH(rank_nodes("two", "block"), Catch::Contains("tasks per node"));
}

TEST_CASE("PyTorch's env:// variables") {
    StepLayout layout;
    layout.rank = 3, layout.world_size = 4, layout.local_rank = 1, layout.local_size = 2;
    layout.node_rank = 1, layout.nnodes = 2, layout.master_addr = "10.0.0.7", layout.port = 23456;
    auto env = wireup_env(WireupChoice{}, layout);
    CHECK(env == std::map<std::string, std::string>{
                     {"MASTER_ADDR", "10.0.0.7"},
                     {"MASTER_PORT", "23456"},
                     {"RANK", "3"},
                     {"WORLD_SIZE", "4"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "2"},
                     {"GROUP_RANK", "1"},
                     {"NODE_RANK", "1"},
                     {"GROUP_WORLD_SIZE", "2"},
                     {"TRELLIS_WIREUP_SET",
                      "GROUP_RANK,GROUP_WORLD_SIZE,LOCAL_RANK,LOCAL_WORLD_SIZE,MASTER_ADDR,MASTER_PORT,NODE_RANK,RANK,"
                      "WORLD_SIZE"}});
    // In a launch inside this step, these values are trellis's, not the user's.
    auto inner = [&](const char* name) { return env.count(name) ? env.at(name) : std::string(); };
    CHECK_FALSE(set_by_user("RANK", inner));
    auto user = [](const char* name) { return std::string(std::string(name) == "RANK" ? "5" : ""); };
    CHECK(set_by_user("RANK", user));
    CHECK_FALSE(set_by_user("WORLD_SIZE", user));
}

TEST_CASE("TF_CONFIG: cluster and task as TensorFlow documents them") {
    StepLayout layout;
    layout.port = 23456;
    layout.rank_addresses = rank_addresses({"10.0.0.7", "10.0.0.8"}, rank_nodes("2(x2)", "block"), layout.port);
    CHECK(layout.rank_addresses ==
          std::vector<std::string>{"10.0.0.7:23457", "10.0.0.7:23458", "10.0.0.8:23457", "10.0.0.8:23458"});

    layout.rank = 2;
    auto config = nlohmann::json::parse(wireup_env(parse_wireup("tf:chief:ps=1"), layout).at("TF_CONFIG"));
    CHECK(config["cluster"]["chief"] == nlohmann::json{"10.0.0.7:23457"});
    CHECK(config["cluster"]["ps"] == nlohmann::json{"10.0.0.7:23458"});
    CHECK(config["cluster"]["worker"] == nlohmann::json{"10.0.0.8:23457", "10.0.0.8:23458"});
    CHECK(config["task"] == nlohmann::json{{"type", "worker"}, {"index", 0}});

    auto workers = nlohmann::json::parse(wireup_env(parse_wireup("tf"), layout).at("TF_CONFIG"));
    CHECK(workers["cluster"].size() == 1);
    CHECK(workers["task"] == nlohmann::json{{"type", "worker"}, {"index", 2}});
    CHECK_THROWS_WITH(wireup_env(parse_wireup("tf:chief:ps=3"), layout), Catch::Contains("leave no worker"));
}
