// SPDX-License-Identifier: Apache-2.0
// trellis-topo: shows a node's GPUs, HCAs and their distances, and the binding plan that the
// plugin and the agent would apply for N tasks.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "config.h"
#include "common/error.hpp"
#include "topology/discovery.hpp"
#include "topology/plan_json.hpp"
#include "topology/report.hpp"

using namespace trellis;
using namespace trellis::topology;

namespace {

const char* const synopsis = R"(Usage: trellis-topo show [--xml FILE] [--json]
       trellis-topo plan --tasks N [--xml FILE] [--policy closest|none]
                         [--allowed-cpus LIST] [--allowed-gpus LIST] [--hca auto|NAME[:PORT],...]
                         [--hca-include GLOB,...] [--hca-exclude GLOB,...] [--any-port-state]
                         [--smt] [--gpu-numbering node|step] [--share-gpus] [--json]

Commands:
  show                    this node's GPUs, HCAs and NUMA nodes with their distance matrix
                          (PIX, PXB, PHB, NODE, SYS, as nvidia-smi topo -m names them)
  plan                    the binding of N local tasks to GPUs, HCAs, CPUs and memory

)";

const char* const epilogue = R"(  -h, --help              this text
  -V, --version           the version

Exit status: 0 on success, 2 on bad usage or input (one line on stderr, nothing on stdout),
1 when this machine's topology cannot be read. See trellis-topo(1).
)";

const cli::Choices<GpuNumbering> gpu_numberings{{{"node", GpuNumbering::node}, {"step", GpuNumbering::step}}};

struct Command {
    std::string xml;
    bool json = false, tasks_given = false;
    PlanRequest request;
};

std::vector<int> gpu_indices(const std::string& value) {
    CpuSet indices = CpuSet::parse(value);  // the same list syntax as CPUs
    if (indices.empty()) throw UsageError("--allowed-gpus is empty (give GPU indices such as 0-3)");
    return {indices.begin(), indices.end()};
}

// Options of both commands, then plan's; `plan` false leaves plan's out.
cli::OptionTable option_table(Command& c, bool plan) {
    cli::OptionTable table("trellis-topo --help");
    table.section("Options:")
        .value("--xml", "FILE", "read an hwloc XML topology instead of discovering this machine",
               [&](auto& v) { c.xml = v; })
        .flag("--json", "print JSON instead of tables", [&] { c.json = true; });
    if (!plan) return table;
    auto& r = c.request;
    table.section("Options of plan:")
        .value("--tasks", "N", "number of local tasks (at least 1)",
               [&](auto& v) {
                   r.tasks = cli::parse_int(v, "--tasks", 1);
                   c.tasks_given = true;
               })
        .value("--policy", "P", "closest (default) or none", [&](auto& v) { r.policy = parse_policy(v); })
        .value("--allowed-cpus", "LIST", "CPUs the step may use, e.g. 0-15,32-47 (default: this\nprocess's)",
               [&](auto& v) {
                   r.allowed_cpus = CpuSet::parse(v);
                   if (r.allowed_cpus->empty()) throw UsageError("--allowed-cpus is empty (give CPUs such as 0-15)");
               })
        .value("--allowed-gpus", "LIST", "GPU indices (PCI order) the step may use, e.g. 0-3\n(default: all)",
               [&](auto& v) { r.allowed_gpus = gpu_indices(v); })
        .value("--hca", "LIST", "auto (default) or HCAs to choose from, e.g. mlx5_0:1,mlx5_2",
               [&](auto& v) {
                   r.hcas.only.clear();
                   if (v != "auto")
                       for (const auto& item : cli::split(v)) r.hcas.only.push_back(HcaRequest::parse(item));
               })
        .value("--hca-include", "GLOBS", "only HCAs whose names match, e.g. 'mlx5_*'",
               [&](auto& v) { r.hcas.include = cli::split(v); })
        .value("--hca-exclude", "GLOBS", "never HCAs whose names match",
               [&](auto& v) { r.hcas.exclude = cli::split(v); })
        .flag("--any-port-state", "also use HCAs without an ACTIVE port", [&] { r.hcas.require_active = false; })
        .flag("--smt", "bind every hardware thread of a core, not only the first", [&] { r.smt = true; })
        .value("--gpu-numbering", "N",
               "the numbers CUDA_VISIBLE_DEVICES uses: node (every GPU of the\n"
               "node, the default) or step (the allowed GPUs only, as a task\n"
               "sees them when Slurm constrains devices)",
               [&](auto& v) { r.gpu_numbering = gpu_numberings.parse(v, "--gpu-numbering"); })
        .flag("--share-gpus", "each task sees all allowed GPUs, its own first", [&] { r.share_gpus = true; });
    return table;
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) throw UsageError("missing command (accepted: show, plan; see --help)");
    const std::string& name = args[0];
    bool help =
        std::find_if(args.begin(), args.end(), [](auto& a) { return a == "-h" || a == "--help"; }) != args.end();
    if (name == "-V" || name == "--version") {
        std::printf("trellis-topo %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (help) {
        Command ignored;
        std::printf("%s%s%s", synopsis, option_table(ignored, true).help().c_str(), epilogue);
        return 0;
    }
    if (name != "show" && name != "plan") throw UsageError("unknown command '" + name + "' (accepted: show, plan)");

    Command command;
    std::vector<std::string> options(args.begin() + 1, args.end());
    if (name == "show") {
        Command probe;
        auto show = option_table(probe, false), plan = option_table(probe, true);
        for (const auto& option : options) {
            std::string flag = option.substr(0, option.find('='));
            if (!show.knows(flag) && plan.knows(flag))
                throw UsageError("option '" + flag + "' belongs to 'plan', not 'show'");
        }
    }
    option_table(command, name == "plan").parse(options);
    if (name == "plan" && !command.tasks_given) throw UsageError("plan needs --tasks N");

    Node node = load_node(command.xml);
    std::string out;
    if (name == "show") {
        out = command.json ? node_to_json(node).dump(2) + "\n" : format_node(node);
    } else {
        Plan plan = make_plan(node, command.request);
        out = command.json ? plan_to_json(plan).dump(2) + "\n" : format_plan(plan);
    }
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run({argv + 1, argv + argc});
    } catch (const std::exception& error) {
        return trellis::report_error("trellis-topo: error: ", error);
    }
}
