// SPDX-License-Identifier: Apache-2.0
// Slurm's GPU binding as srun asks for it, in Slurm 22.05's terms and in 23.11's and later
// (--tres-bind, --tres-per-task, typed counts, sbatch's SLURM_TRES_* variables,
// --gres-flags=allow-task-sharing).
#include "tests/catch.hpp"

#include <map>

#include "common/error.hpp"
#include "slurm/gpu_binding.hpp"

using namespace trellis::slurm;

namespace {

constexpr long v22_05 = slurm_version(22, 5, 8), v23_11_0 = slurm_version(23, 11, 0), v24_11 = slurm_version(24, 11, 5);

// srun with these arguments (after "srun") and these variables.
SrunInput srun(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "srun");
    return SrunInput{args, [env](const char* name) {
                         auto found = env.find(name);
                         return found == env.end() ? std::string() : found->second;
                     }};
}

std::string bind(long version, std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    return srun_gpu_binding(srun(std::move(args), std::move(env)), version).bind;
}

}  // namespace

TEST_CASE("Slurm 22.05: --gpu-bind, --ntasks-per-gpu, a plain --gpus-per-task") {
    CHECK(bind(v22_05, {"-n2"}) == "");
    CHECK(bind(v22_05, {"--gpu-bind=map_gpu:1,0"}) == "map_gpu:1,0");
    CHECK(bind(v22_05, {"--gpu-bind", "closest"}) == "closest");
    CHECK(bind(v22_05, {}, {{"SLURM_GPU_BIND", "none"}}) == "none");
    CHECK(bind(v22_05, {"--gpu-bind=none"}, {{"SLURM_GPU_BIND", "closest"}}) == "none");  // the command line's
    CHECK(bind(v22_05, {"--gpus-per-task=2"}) == "per_task:2");
    CHECK(bind(v22_05, {}, {{"SLURM_GPUS_PER_TASK", "1"}}) == "per_task:1");  // sbatch's, in its script
    CHECK(bind(v22_05, {"--gpus-per-task=a100:2"}) == "");                    // read as 0: no binding
    CHECK(bind(v22_05, {"--ntasks-per-gpu=2"}) == "single:2");
    CHECK(bind(v22_05, {}, {{"SLURM_NTASKS_PER_GPU", "3"}}) == "single:3");
    CHECK(bind(v22_05, {"--gpus-per-task=1", "--gpu-bind=closest"}) == "closest");
    // 22.05 has neither --tres-bind nor --tres-per-task nor their variables.
    CHECK(bind(v22_05, {}, {{"SLURM_TRES_BIND", "gres/gpu:per_task:1"}, {"SLURM_TRES_PER_TASK", "gres/gpu=1"}}) == "");
    CHECK_FALSE(srun_gpu_binding(srun({"--gres-flags=allow-task-sharing"}), v22_05).task_sharing);
}

TEST_CASE("Slurm 23.11 and later: --tres-bind, its variable, and --gpu-bind written as it") {
    for (long version : {v23_11_0, v24_11}) {
        CHECK(bind(version, {"-n2"}) == "");
        CHECK(bind(version, {"--tres-bind=gres/gpu:per_task:2"}) == "per_task:2");
        CHECK(bind(version, {"--tres-bind", "gres/gpu:single:1"}) == "single:1");
        CHECK(bind(version, {"--tres-bind=gres/gpu:map_gpu:1,0"}) == "map_gpu:1,0");
        CHECK(bind(version, {"--tres-bind=gres/gpu:map:1,0"}) == "map:1,0");
        CHECK(bind(version, {"--tres-bind=gres/gpu:mask_gpu:0x1,0x2"}) == "mask_gpu:0x1,0x2");
        CHECK(bind(version, {"--tres-bind=gres/gpu:mask:0x1,0x2"}) == "mask:0x1,0x2");
        CHECK(bind(version, {"--tres-bind=gres/gpu:closest"}) == "closest");
        CHECK(bind(version, {"--tres-bind=gres/gpu:verbose,none"}) == "verbose,none");
        CHECK(bind(version, {"--tres-bind=gres/nic:closest+gres/gpu:per_task:1"}) == "per_task:1");
        CHECK(bind(version, {"--gpu-bind=map_gpu:1,0"}) == "map_gpu:1,0");
        // The last one given wins; the command line over the variables, SLURM_TRES_BIND over
        // SLURM_GPU_BIND.
        CHECK(bind(version, {"--gpu-bind=closest", "--tres-bind=gres/gpu:none"}) == "none");
        CHECK(bind(version, {"--tres-bind=gres/gpu:none", "--gpu-bind=closest"}) == "closest");
        CHECK(bind(version, {"--gpu-bind=closest"}, {{"SLURM_TRES_BIND", "gres/gpu:per_task:1"}}) == "closest");
        CHECK(bind(version, {}, {{"SLURM_GPU_BIND", "closest"}, {"SLURM_TRES_BIND", "gres/gpu:none"}}) == "none");
    }
}

TEST_CASE("Slurm 23.11 and later: every GPU count per task binds per task, typed or not") {
    for (long version : {v23_11_0, v24_11}) {
        CHECK(bind(version, {"--gpus-per-task=2"}) == "per_task:2");
        CHECK(bind(version, {"--gpus-per-task=a100:2"}) == "per_task:2");
        CHECK(bind(version, {"--gpus-per-task=a100=3"}) == "per_task:3");
        CHECK(bind(version, {"--tres-per-task=gres/gpu:1"}) == "per_task:1");
        CHECK(bind(version, {"--tres-per-task=gres/gpu:a100:2"}) == "per_task:2");
        CHECK(bind(version, {"--tres-per-task=gres:gpu:2"}) == "per_task:2");
        CHECK(bind(version, {"--tres-per-task=cpu=2,gres/gpu=1"}) == "per_task:1");
        CHECK(bind(version, {"--tres-per-task=cpu=2"}) == "");
        // An explicit GPU binding is kept; one of another TRES is not a GPU binding.
        CHECK(bind(version, {"--gpus-per-task=1", "--tres-bind=gres/gpu:closest"}) == "closest");
        CHECK(bind(version, {"--gpus-per-task=1", "--tres-bind=gres/nic:closest"}) == "per_task:1");
        // --gpus-per-task on the command line over SLURM_TRES_PER_TASK; --tres-per-task over
        // SLURM_GPUS_PER_TASK.
        CHECK(bind(version, {"--gpus-per-task=2"}, {{"SLURM_TRES_PER_TASK", "gres/gpu=1"}}) == "per_task:2");
        CHECK(bind(version, {"--tres-per-task=gres/gpu:2"}, {{"SLURM_GPUS_PER_TASK", "1"}}) == "per_task:2");
        // --ntasks-per-gpu binds single:N only where nothing else binds.
        CHECK(bind(version, {"--ntasks-per-gpu=2"}) == "single:2");
        CHECK(bind(version, {"--ntasks-per-gpu=2", "--gpus-per-task=1"}) == "per_task:1");
        CHECK(bind(version, {"--ntasks-per-gpu=2", "--tres-bind=gres/nic:closest"}) == "");
    }
}

TEST_CASE("Slurm 23.11 and later: sbatch's and salloc's SLURM_TRES_BIND and SLURM_TRES_PER_TASK in a plain srun") {
    for (long version : {v23_11_0, v24_11}) {
        // sbatch -n2 --gpus-per-task=1 exports both (24.11 src/common/env.c, set_env_from_opts).
        CHECK(bind(version, {}, {{"SLURM_TRES_BIND", "gres/gpu:per_task:1"}, {"SLURM_TRES_PER_TASK", "gres/gpu=1"}}) ==
              "per_task:1");
        CHECK(bind(version, {}, {{"SLURM_TRES_PER_TASK", "gres/gpu:a100=2"}}) == "per_task:2");
        CHECK(bind(version, {}, {{"SLURM_TRES_PER_TASK", "cpu=2,gres/gpu=1"}}) == "per_task:1");
        CHECK(bind(version, {}, {{"SLURM_TRES_BIND", "gres/gpu:single:2"}}) == "single:2");
        CHECK(bind(version, {}, {{"SLURM_TRES_BIND", "gres/gpu:map:1,0"}}) == "map:1,0");
        CHECK(bind(version, {}, {{"SLURM_TRES_BIND", "gres/gpu:mask:0x2,0x1"}}) == "mask:0x2,0x1");
        CHECK(bind(version, {}, {{"SLURM_TRES_BIND", "gres/gpu:mask_gpu:0x2,0x1"}}) == "mask_gpu:0x2,0x1");
        CHECK(bind(version, {}, {{"SLURM_GPUS_PER_TASK", "a100:1"}}) == "per_task:1");
        // A plain srun's own option wins over the batch script's.
        CHECK(bind(version, {"--gpu-bind=none"}, {{"SLURM_TRES_BIND", "gres/gpu:per_task:1"}}) == "none");
    }
}

TEST_CASE("--gres-flags=allow-task-sharing: Slurm 23.11.4 and later, in any --gres-flags") {
    auto sharing = [](long version, std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
        return srun_gpu_binding(srun(std::move(args), std::move(env)), version).task_sharing;
    };
    CHECK(sharing(v24_11, {"--gpus-per-task=1", "--gres-flags=allow-task-sharing"}));
    CHECK(sharing(v24_11, {"--gres-flags", "enforce-binding,allow-task-sharing"}));
    CHECK(sharing(v24_11, {"--gres-flags=allow-task-sharing", "--gres-flags=enforce-binding"}));  // never cleared
    CHECK(sharing(v24_11, {}, {{"SLURM_GRES_FLAGS", "allow-task-sharing"}}));
    CHECK_FALSE(sharing(v24_11, {"--gres-flags=enforce-binding"}));
    CHECK_FALSE(sharing(v24_11, {"--gpus-per-task=1"}));
    CHECK_FALSE(sharing(v23_11_0, {"--gres-flags=allow-task-sharing"}));  // 23.11.4
    CHECK(sharing(slurm_version(23, 11, 4), {"--gres-flags=allow-task-sharing"}));
    CHECK(srun_gpu_binding(srun({"--gpus-per-task=1", "--gres-flags=allow-task-sharing"}), v24_11).bind ==
          "per_task:1");
}

TEST_CASE("the GPU part of a --tres-bind value, and a per_task binding's count") {
    CHECK(gpu_part_of_tres_bind("gres/gpu:per_task:1") == "per_task:1");
    CHECK(gpu_part_of_tres_bind("gres/nic:closest+gres/gpu:map:0,1") == "map:0,1");
    CHECK(gpu_part_of_tres_bind("gres/nic:closest") == "");
    CHECK(gpu_part_of_tres_bind("") == "");
    CHECK(per_task_gpus("per_task:2") == 2);
    CHECK(per_task_gpus("verbose,per_task:1") == 1);
    CHECK(per_task_gpus("per_task:a100:2") == 0);  // 22.05's typed count: no binding
    CHECK(per_task_gpus("single:1") == 0);
    CHECK(per_task_gpus("") == 0);
}

TEST_CASE("a map or mask binding's GPUs per task, as Slurm reads the list") {
    CHECK(is_map_or_mask("map_gpu:1,0"));
    CHECK(is_map_or_mask("verbose,mask:0x3"));
    CHECK_FALSE(is_map_or_mask("per_task:1"));
    CHECK_FALSE(is_map_or_mask("closest"));
    CHECK(map_or_mask_positions("map_gpu:1,0", 0) == std::vector<int>{1});
    CHECK(map_or_mask_positions("map_gpu:1,0", 1) == std::vector<int>{0});
    CHECK(map_or_mask_positions("map:1,0", 2) == std::vector<int>{1});    // the list begins again
    CHECK(map_or_mask_positions("map:3*2,0", 1) == std::vector<int>{3});  // 3 for two tasks
    CHECK(map_or_mask_positions("map:3*2,0", 2) == std::vector<int>{0});
    CHECK(map_or_mask_positions("mask_gpu:0x2,0x5", 0) == std::vector<int>{1});
    CHECK(map_or_mask_positions("mask:0x2,0x5", 1) == std::vector<int>{0, 2});
    CHECK(map_or_mask_positions("mask:3", 0) == std::vector<int>{0, 1});
    CHECK(map_or_mask_positions("per_task:1", 0).empty());
    CHECK_THROWS_AS(map_or_mask_positions("map:x", 0), trellis::UsageError);
}
