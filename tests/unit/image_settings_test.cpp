// SPDX-License-Identifier: Apache-2.0
// An image's settings as the tasks take them: each row of spank_trellis(8)'s table.
#include "tests/catch.hpp"

#include <set>

#include "agent/container/container_spec.hpp"
#include "agent/image/settings.hpp"
#include "common/error.hpp"

using namespace trellis::agent;

namespace {

const char* skopeo_config = R"({"architecture": "amd64",
  "config": {"Env": ["PATH=/usr/bin", "FROM_IMAGE=yes", "KEEP=image", "SLURM_JOB_ID=9", "TRELLIS_RANK=7",
                     "PMIX_RANK=3", "CUDA_VISIBLE_DEVICES=all", "OMP_NUM_THREADS=99", "EQUALS=a=b",
                     "SLURMD_NODENAME=image", "SRUN_DEBUG=9"],
             "WorkingDir": "/work", "Entrypoint": ["/entry.sh", "-x"], "Cmd": ["sh"]}})";

std::set<std::string> names(const std::vector<std::pair<std::string, std::string>>& env) {
    std::set<std::string> out;
    for (const auto& [name, value] : env) out.insert(name + "=" + value);
    return out;
}

}  // namespace

TEST_CASE("settings as skopeo inspect --config prints them, or the config object alone") {
    auto settings = parse_image_settings(skopeo_config);
    CHECK(settings.working_dir == "/work");
    CHECK(settings.entrypoint == std::vector<std::string>{"/entry.sh", "-x"});
    CHECK(settings.env.size() == 11);
    CHECK(settings.env[8] == std::pair<std::string, std::string>{"EQUALS", "a=b"});
    CHECK(parse_image_settings(R"({"WorkingDir": "/w"})").working_dir == "/w");
    CHECK(parse_image_settings("").env.empty());
    CHECK(parse_image_settings(R"({"config": {"Env": null, "Entrypoint": null}})").entrypoint.empty());
    CHECK_THROWS_AS(parse_image_settings("[1]"), ContainerError);
    CHECK_THROWS_AS(parse_image_settings(R"({"config": {"Env": ["NOEQUALS"]}})"), ContainerError);
    CHECK_THROWS_AS(parse_image_settings(R"({"config": {"WorkingDir": "relative"}})"), ContainerError);
    CHECK(one_line_settings("") == "{}");
    CHECK(one_line_settings("{\n \"WorkingDir\": \"/w\"\n}") == R"({"WorkingDir":"/w"})");
}

TEST_CASE("Env: the image's over the job's, except --trellis-env names and what trellis and Slurm set") {
    auto settings = parse_image_settings(skopeo_config);
    auto task_has = [](const std::string& name) { return name == "CUDA_VISIBLE_DEVICES"; };
    auto taken = names(image_env_for_task(settings, {{"KEEP"}, false}, task_has));
    CHECK(taken == std::set<std::string>{"PATH=/usr/bin", "FROM_IMAGE=yes", "EQUALS=a=b", "OMP_NUM_THREADS=99"});
    // Without --trellis-env, KEEP comes from the image; a trellis variable the task lacks too.
    taken = names(image_env_for_task(settings, {}, [](const std::string&) { return false; }));
    CHECK(taken.count("KEEP=image") == 1);
    CHECK(taken.count("CUDA_VISIBLE_DEVICES=all") == 1);
    CHECK(taken.count("SLURM_JOB_ID=9") == 0);
    CHECK(taken.count("TRELLIS_RANK=7") == 0);
    CHECK(taken.count("PMIX_RANK=3") == 0);
    CHECK(taken.count("SLURMD_NODENAME=image") == 0);
    CHECK(taken.count("SRUN_DEBUG=9") == 0);
}

TEST_CASE("--trellis-env names") {
    CHECK(parse_env_names("A,B_2,_c") == std::vector<std::string>{"A", "B_2", "_c"});
    CHECK(parse_env_names("").empty());
    CHECK_THROWS_AS(parse_env_names("A,,B"), trellis::UsageError);
    CHECK_THROWS_AS(parse_env_names("1A"), trellis::UsageError);
    CHECK_THROWS_AS(parse_env_names("A=B"), trellis::UsageError);
}

TEST_CASE("Entrypoint: ignored unless asked for, then before the command") {
    auto settings = parse_image_settings(skopeo_config);
    CHECK(task_command(settings, {}, {"python", "x.py"}) == std::vector<std::string>{"python", "x.py"});
    CHECK(task_command(settings, {{}, true}, {"python", "x.py"}) ==
          std::vector<std::string>{"/entry.sh", "-x", "python", "x.py"});
    CHECK(task_command(ImageSettings{}, {{}, true}, {"python"}) == std::vector<std::string>{"python"});
}

TEST_CASE("working directory: under a mount, the image's WorkingDir, the job's if in the image, /") {
    auto with_workdir = parse_image_settings(skopeo_config);
    ImageSettings without;
    // 1. The job's folder at or under a mount destination comes first.
    CHECK(working_directory_candidates("/data/run", {"/data"}, with_workdir) ==
          std::vector<std::string>{"/data/run", "/work", "/"});
    CHECK(working_directory_candidates("/data", {"/data/"}, with_workdir).front() == "/data");
    CHECK(working_directory_candidates("/database", {"/data"}, with_workdir).front() == "/work");
    // 2. Else the image's WorkingDir, before the job's folder.
    CHECK(working_directory_candidates("/home/u", {}, with_workdir) ==
          std::vector<std::string>{"/work", "/home/u", "/"});
    // 3, 4. Else the job's folder when the image has it, else /.
    CHECK(working_directory_candidates("/home/u", {}, without) == std::vector<std::string>{"/home/u", "/"});
    CHECK(start_directory_note("/", "/home/u", "", "/i.sqsh").find("tasks start in /") != std::string::npos);
    CHECK(start_directory_note("/home/u", "/home/u", "", "/i.sqsh").empty());
    CHECK(start_directory_note("/", "/", "", "/i.sqsh").empty());
}
