// SPDX-License-Identifier: Apache-2.0
// TRELLIS_BINDING_SET: a step started inside a task takes none of the task's binding as the
// user's choice, and replaces all of it.
#include "tests/catch.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "agent/binding/binding_set.hpp"

using namespace trellis::agent;

namespace {

EnvLookup environment(std::map<std::string, std::string> values) {
    return [values](const char* name) {
        auto found = values.find(name);
        return found == values.end() ? std::string() : found->second;
    };
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("a name list") {
    CHECK(listed("TRELLIS_GPU,TRELLIS_HCA", "TRELLIS_HCA"));
    CHECK(listed("TRELLIS_HCA", "TRELLIS_HCA"));
    CHECK_FALSE(listed("TRELLIS_HCA_X,X_TRELLIS_HCA", "TRELLIS_HCA"));
    CHECK_FALSE(listed("", ""));
}

TEST_CASE("a variable trellis set for the enclosing task is not the user's choice") {
    // The nested srun's case: TRELLIS_HCA is the outer task's own HCA.
    auto task = environment({{"TRELLIS_HCA", "mlx5_0:1"}, {"TRELLIS_BINDING_SET", "TRELLIS_GPU,TRELLIS_HCA"}});
    CHECK(set_for_enclosing_task("TRELLIS_HCA", task));
    // sbatch --trellis-hca=mlx5_1 hands the user's choice to the batch script, which no plan
    // of trellis's has touched.
    auto batch = environment({{"TRELLIS_HCA", "mlx5_1"}});
    CHECK_FALSE(set_for_enclosing_task("TRELLIS_HCA", batch));
}

TEST_CASE("a task's binding replaces the enclosing task's") {
    auto outer = environment(
        {{"TRELLIS_GPU", "5,6"},
         {"TRELLIS_HCA", "mlx5_4:1"},
         {"NCCL_IB_HCA", "=mlx5_4:1,mlx5_6:1"},
         {"CUDA_VISIBLE_DEVICES", "0,1"},
         {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
         {"TRELLIS_BINDING_SET", "CUDA_DEVICE_ORDER,CUDA_VISIBLE_DEVICES,NCCL_IB_HCA,TRELLIS_GPU,TRELLIS_HCA"}});
    auto inner = task_environment({{"TRELLIS_HCA", "mlx5_0:1"}, {"TRELLIS_CPUS", "0-15"}}, outer);
    CHECK(inner.set.at("TRELLIS_HCA") == "mlx5_0:1");
    CHECK(inner.set.at("TRELLIS_BINDING_SET") == "TRELLIS_CPUS,TRELLIS_HCA");
    CHECK(contains(inner.unset, "TRELLIS_GPU"));
    CHECK(contains(inner.unset, "NCCL_IB_HCA"));
    CHECK_FALSE(contains(inner.unset, "TRELLIS_HCA"));
    // Slurm sets GPU visibility for every step: what is there now is Slurm's, and the order
    // its numbers assume stays with it.
    CHECK_FALSE(contains(inner.unset, "CUDA_VISIBLE_DEVICES"));
    CHECK_FALSE(contains(inner.unset, "CUDA_DEVICE_ORDER"));
}

TEST_CASE("without GPUs visible the enclosing task's CUDA order goes too") {
    auto outer = environment(
        {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"TRELLIS_BINDING_SET", "CUDA_DEVICE_ORDER,CUDA_VISIBLE_DEVICES"}});
    auto inner = task_environment({{"TRELLIS_CPUS", "0-15"}}, outer);
    CHECK(contains(inner.unset, "CUDA_DEVICE_ORDER"));
}

TEST_CASE("a plan that binds nothing leaves no list behind") {
    auto fresh = task_environment({}, environment({}));
    CHECK(fresh.set.empty());
    CHECK(fresh.unset.empty());
    auto nested = task_environment({}, environment({{"TRELLIS_GPU", "1"}, {"TRELLIS_BINDING_SET", "TRELLIS_GPU"}}));
    CHECK(contains(nested.unset, "TRELLIS_GPU"));
    CHECK(contains(nested.unset, "TRELLIS_BINDING_SET"));
}
