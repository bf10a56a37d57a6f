// SPDX-License-Identifier: Apache-2.0
#include "slurm/gpu_binding.hpp"

#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "common/error.hpp"

namespace trellis::slurm {
namespace {

constexpr long v23_11 = slurm_version(23, 11, 0);
// --gres-flags=allow-task-sharing: 23.11.4 (src/common/slurm_opt.c, arg_set_gres_flags).
constexpr long v23_11_4 = slurm_version(23, 11, 4);

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// The values OPTION was given on the command line, in order.
std::vector<std::string> on_command_line(const std::vector<std::string>& args, const char* option) {
    std::vector<std::string> values;
    const std::string prefix = std::string(option) + "=";
    for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] == option && i + 1 < args.size()) values.push_back(args[i + 1]);
        if (args[i].rfind(prefix, 0) == 0) values.push_back(args[i].substr(prefix.size()));
    }
    return values;
}

// Every value OPTION was given, the variable's first: srun reads its input variables before
// its command line (src/srun/opt.c, _opt_env then _opt_args).
std::vector<std::string> all_given(const SrunInput& srun, const char* option, const char* variable) {
    std::vector<std::string> values;
    if (std::string env = srun.env(variable); !env.empty()) values.push_back(env);
    for (auto& value : on_command_line(srun.args, option)) values.push_back(value);
    return values;
}

// The items of a comma-separated list.
std::vector<std::string> items(const std::string& list, char separator = ',') {
    std::vector<std::string> out;
    for (size_t start = 0;;) {
        size_t end = list.find(separator, start);
        out.push_back(list.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return out;
        start = end + 1;
    }
}

// The count of a --gpus-per-task value: "N", or since 23.11 "TYPE:N" or "TYPE=N" (24.11
// src/common/slurm_opt.c, _get_gpu_cnt_and_str, which reads the number after the separator).
int typed_count(const std::string& value) {
    size_t sep = value.find_first_of(":=");
    std::string number = sep == std::string::npos ? value : value.substr(sep + 1);
    return all_digits(number) ? std::atoi(number.c_str()) : 0;
}

// The GPU count of a --tres-per-task value (SLURM_TRES_PER_TASK): its gres/gpu item among
// others ("cpu=2,gres/gpu:a100=1"). srun writes "gres:gpu" as "gres/gpu" (24.11
// src/common/slurm_protocol_defs.c, slurm_format_tres_string) and a count after ':' or '='
// (gres/gpu:2, gres/gpu=2, gres/gpu:TYPE:2, gres/gpu:TYPE=2); a name without count is one.
int tres_gpu_count(const std::string& tres_per_task) {
    for (const std::string& item : items(tres_per_task)) {
        if (item.rfind("gres/gpu", 0) != 0 && item.rfind("gres:gpu", 0) != 0) continue;
        std::string rest = item.substr(8);
        if (rest.empty()) return 1;
        if (rest[0] != ':' && rest[0] != '=') continue;  // another gres: gres/gpuX
        size_t sep = rest.find_last_of(":=");
        std::string number = rest.substr(sep + 1);
        return all_digits(number) ? std::atoi(number.c_str()) : 1;
    }
    return 0;
}

// The binding srun builds from --gpu-bind and --tres-bind, in the order srun reads them: the
// variables (SLURM_GPU_BIND before SLURM_TRES_BIND in 24.11 src/srun/opt.c's env_vars table),
// then the command line, the last one winning (each replaces opt->tres_bind: 24.11
// src/common/slurm_opt.c, arg_set_gpu_bind writes --gpu-bind=X as gres/gpu:X).
std::string tres_bind_23_11(const SrunInput& srun) {
    std::string bind;
    if (std::string env = srun.env("SLURM_GPU_BIND"); !env.empty()) bind = "gres/gpu:" + env;
    if (std::string env = srun.env("SLURM_TRES_BIND"); !env.empty()) bind = env;
    for (size_t i = 1; i < srun.args.size(); ++i) {
        const std::string& arg = srun.args[i];
        const std::string next = i + 1 < srun.args.size() ? srun.args[i + 1] : "";
        if (arg == "--gpu-bind") bind = "gres/gpu:" + next;
        if (arg.rfind("--gpu-bind=", 0) == 0) bind = "gres/gpu:" + arg.substr(11);
        if (arg == "--tres-bind") bind = next;
        if (arg.rfind("--tres-bind=", 0) == 0) bind = arg.substr(12);
    }
    return bind;
}

std::string ntasks_per_gpu(const SrunInput& srun) {
    std::string n = srun.given("--ntasks-per-gpu", "SLURM_NTASKS_PER_GPU");
    return n.empty() ? srun.given("--ntasks-per-tres", "SLURM_NTASKS_PER_TRES") : n;
}

// Slurm 22.05 (and 23.02): --gpu-bind, else the implicit binding of srun's launch request
// (22.05 src/srun/libsrun/launch.c, _create_job_step_create_request): gpu:single:N for
// --ntasks-per-tres or --ntasks-per-gpu, else gpu:per_task:VALUE for --gpus-per-task, which
// the step reads with slurm_atoul (22.05 src/common/gres.c, _get_usable_gres): "a100:2" is 0,
// no binding.
std::string gpu_bind_22_05(const SrunInput& srun) {
    if (std::string bind = srun.given("--gpu-bind", "SLURM_GPU_BIND"); !bind.empty()) return bind;
    if (std::string n = ntasks_per_gpu(srun); !n.empty()) return "single:" + n;
    std::string per_task = srun.given("--gpus-per-task", "SLURM_GPUS_PER_TASK");
    return all_digits(per_task) && std::atoi(per_task.c_str()) > 0 ? "per_task:" + per_task : "";
}

// Slurm 23.11 and later: --tres-bind's GPU part; else every GPU count per task binds
// per_task:N (24.11 src/common/slurm_opt.c, _implicitly_bind_tres_per_task, commit
// 03d3854445, first in 23.11.0rc1), over a --tres-per-task that --gpus-per-task fills in or
// overrides (_set_tres_per_task_from_sibling_opt: the command line's over the environment's);
// else, only with no --tres-bind at all, single:N for --ntasks-per-tres or --ntasks-per-gpu
// (24.11 src/srun/launch.c, _create_job_step_create_request).
std::string gpu_bind_23_11(const SrunInput& srun) {
    std::string tres_bind = tres_bind_23_11(srun);
    if (std::string gpu = gpu_part_of_tres_bind(tres_bind); !gpu.empty()) return gpu;
    int count = 0;
    auto cli = on_command_line(srun.args, "--gpus-per-task");
    if (!cli.empty())
        count = typed_count(cli.back());
    else if (std::string tres = srun.given("--tres-per-task", "SLURM_TRES_PER_TASK"); tres_gpu_count(tres) > 0)
        count = tres_gpu_count(tres);
    else
        count = typed_count(srun.env("SLURM_GPUS_PER_TASK"));
    if (count > 0) return "per_task:" + std::to_string(count);
    if (std::string n = ntasks_per_gpu(srun); !n.empty() && tres_bind.empty()) return "single:" + n;
    return "";
}

}  // namespace

std::string SrunInput::given(const char* option, const char* variable) const {
    auto values = all_given(*this, option, variable);
    return values.empty() ? "" : values.back();
}

SrunGpuBinding srun_gpu_binding(const SrunInput& srun, long version) {
    SrunGpuBinding binding;
    binding.bind = version >= v23_11 ? gpu_bind_23_11(srun) : gpu_bind_22_05(srun);
    // Each --gres-flags (and SLURM_GRES_FLAGS) adds its flags; none clears allow-task-sharing
    // (24.11 src/common/slurm_opt.c, arg_set_gres_flags). srun sends it as a step flag
    // (src/srun/launch.c, SSF_GRES_ALLOW_TASK_SHARING) that reaches no variable of the step.
    if (version >= v23_11_4)
        for (const std::string& flags : all_given(srun, "--gres-flags", "SLURM_GRES_FLAGS"))
            for (const std::string& flag : items(flags))
                if (strcasecmp(flag.c_str(), "allow-task-sharing") == 0) binding.task_sharing = true;
    return binding;
}

// A --tres-bind value is TRES specifications joined by '+', each TYPE/NAME:BINDING (24.11
// src/common/tres_bind.c, tres_bind_verify_cmdline); the step finds its GPU binding after
// "gres/gpu:" (24.11 src/interfaces/gres.c, _get_usable_gres).
std::string gpu_part_of_tres_bind(const std::string& tres_bind) {
    for (const std::string& item : items(tres_bind, '+'))
        if (item.rfind("gres/gpu:", 0) == 0) return item.substr(9);
    return "";
}

int per_task_gpus(const std::string& gpu_bind) {
    std::string bind = gpu_bind.rfind("verbose,", 0) == 0 ? gpu_bind.substr(8) : gpu_bind;
    if (bind.rfind("per_task:", 0) != 0) return 0;
    std::string n = bind.substr(9);
    return all_digits(n) ? std::atoi(n.c_str()) : 0;
}

namespace {

// The list of a map or mask binding, after its keyword; "" for another binding.
std::string map_or_mask_list(const std::string& gpu_bind, bool& is_map) {
    std::string bind = gpu_bind.rfind("verbose,", 0) == 0 ? gpu_bind.substr(8) : gpu_bind;
    for (const char* keyword : {"map_gpu:", "map:", "mask_gpu:", "mask:"})
        if (bind.rfind(keyword, 0) == 0) {
            is_map = std::strncmp(keyword, "map", 3) == 0;
            return bind.substr(std::strlen(keyword));
        }
    return "";
}

}  // namespace

bool is_map_or_mask(const std::string& gpu_bind) {
    bool is_map = false;
    return !map_or_mask_list(gpu_bind, is_map).empty();
}

// Slurm's rule (24.11 src/interfaces/gres.c and 22.05 src/common/gres.c,
// _get_usable_gres_map_or_mask): the values are read with strtol base 0, one per task, each
// "*N" held for N tasks, the list begun again until it reaches the task; a map's value is a
// bit position, a mask's bits are. Under the local device index (constrained devices) the
// positions are the step's GPUs (_translate_step_to_global_device_index), otherwise the node's,
// within the step's.
std::vector<int> map_or_mask_positions(const std::string& gpu_bind, int task) {
    bool is_map = false;
    std::string list = map_or_mask_list(gpu_bind, is_map);
    if (list.empty() || task < 0) return {};
    struct Entry {
        long value;
        int tasks;
    };
    std::vector<Entry> entries;
    int period = 0;
    for (const std::string& item : items(list.substr(0, list.find('+')))) {
        size_t star = item.find('*');
        char* end = nullptr;
        long value = std::strtol(item.c_str(), &end, 0);
        int tasks = star == std::string::npos ? 1 : std::atoi(item.c_str() + star + 1);
        if (item.empty() || end == item.c_str() || value < 0)
            throw UsageError("Slurm's GPU binding " + gpu_bind + " has a bad value '" + item + "'");
        entries.push_back({value, tasks > 0 ? tasks : 1});  // Slurm takes a repetition of 0 as 1
        period += entries.back().tasks;
    }
    int offset = task % period;
    for (const Entry& entry : entries) {
        if (offset < entry.tasks) {
            std::vector<int> positions;
            if (is_map) return {static_cast<int>(entry.value)};
            for (int bit = 0; bit < 63; ++bit)
                if ((entry.value >> bit) & 1) positions.push_back(bit);
            return positions;
        }
        offset -= entry.tasks;
    }
    return {};
}

}  // namespace trellis::slurm
