// trellis-topo: shows a node's GPUs, HCAs and their distances, and the binding plan that the
// plugin and the agent would apply for N tasks.
#include <getopt.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include "config.h"
#include "topology/discovery.hpp"
#include "topology/plan_json.hpp"
#include "topology/report.hpp"

using namespace trellis::topology;

namespace {

const char* const usage = R"(Usage: trellis-topo show [--xml FILE] [--json]
       trellis-topo plan --tasks N [--xml FILE] [--policy closest|none]
                         [--allowed-cpus LIST] [--allowed-gpus LIST] [--hca auto|NAME[:PORT],...]
                         [--hca-include GLOB,...] [--hca-exclude GLOB,...] [--any-port-state]
                         [--smt] [--gpu-numbering node|step] [--share-gpus] [--json]

Commands:
  show            this node's GPUs, HCAs and NUMA nodes with their distance matrix
                  (PIX, PXB, PHB, NODE, SYS, as nvidia-smi topo -m names them)
  plan            the binding of N local tasks to GPUs, HCAs, CPUs and memory

Options:
  --xml FILE            read an hwloc XML topology instead of discovering this machine
  --json                print JSON instead of tables
  --tasks N             number of local tasks (at least 1)
  --policy P            closest (default) or none
  --allowed-cpus LIST   CPUs the step may use, e.g. 0-15,32-47 (default: this process's)
  --allowed-gpus LIST   GPU indices (PCI order) the step may use, e.g. 0-3 (default: all)
  --hca LIST            auto (default) or HCAs to choose from, e.g. mlx5_0:1,mlx5_2
  --hca-include GLOBS   only HCAs whose names match, e.g. 'mlx5_*'
  --hca-exclude GLOBS   never HCAs whose names match
  --any-port-state      also use HCAs without an ACTIVE port
  --smt                 bind every hardware thread of a core, not only the first
  --gpu-numbering N     the numbers CUDA_VISIBLE_DEVICES uses: node (every GPU of the node,
                        the default) or step (the allowed GPUs only, as a task sees them
                        when Slurm constrains devices)
  --share-gpus          each task sees all allowed GPUs, its own first
  -h, --help            this text
  -V, --version         the version

Exit status: 0 on success, 2 on bad usage or input (one line on stderr, nothing on stdout).
See trellis-topo(1).
)";

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> items;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        if (comma > start) items.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return items;
}

int parse_tasks(const std::string& text) {
    size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || used == 0 || value < 1)
        throw UsageError("--tasks must be a whole number of at least 1, not '" + text + "'");
    return value;
}

int run(int argc, char** argv) {
    if (argc < 2) throw UsageError("missing command (accepted: show, plan; see --help)");
    std::string command = argv[1];
    if (command == "-h" || command == "--help") {
        std::cout << usage;
        return 0;
    }
    if (command == "-V" || command == "--version") {
        std::cout << "trellis-topo " PACKAGE_VERSION "\n";
        return 0;
    }
    if (command != "show" && command != "plan")
        throw UsageError("unknown command '" + command + "' (accepted: show, plan)");

    enum { opt_xml = 256, opt_json, opt_tasks, opt_policy, opt_cpus, opt_gpus, opt_hca,
           opt_include, opt_exclude, opt_any_state, opt_smt, opt_numbering, opt_share };
    static const option long_options[] = {
        {"xml", required_argument, nullptr, opt_xml},
        {"json", no_argument, nullptr, opt_json},
        {"tasks", required_argument, nullptr, opt_tasks},
        {"policy", required_argument, nullptr, opt_policy},
        {"allowed-cpus", required_argument, nullptr, opt_cpus},
        {"allowed-gpus", required_argument, nullptr, opt_gpus},
        {"hca", required_argument, nullptr, opt_hca},
        {"hca-include", required_argument, nullptr, opt_include},
        {"hca-exclude", required_argument, nullptr, opt_exclude},
        {"any-port-state", no_argument, nullptr, opt_any_state},
        {"smt", no_argument, nullptr, opt_smt},
        {"gpu-numbering", required_argument, nullptr, opt_numbering},
        {"share-gpus", no_argument, nullptr, opt_share},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0}};

    std::string xml;
    bool json = false, tasks_given = false;
    PlanRequest request;
    opterr = 0;
    optind = 2;
    int opt;
    while ((opt = getopt_long(argc, argv, "+:h", long_options, nullptr)) != -1) {
        std::string value = optarg ? optarg : "";
        bool plan_only = opt != opt_xml && opt != opt_json && opt != 'h';
        if (plan_only && command != "plan")
            throw UsageError(std::string("option '") + argv[optind - 1] +
                             "' belongs to 'plan', not 'show'");
        try {
            switch (opt) {
                case 'h': std::cout << usage; return 0;
                case opt_xml: xml = value; break;
                case opt_json: json = true; break;
                case opt_tasks: request.tasks = parse_tasks(value); tasks_given = true; break;
                case opt_policy: request.policy = parse_policy(value); break;
                case opt_cpus:
                    request.allowed_cpus = CpuSet::parse(value);
                    if (request.allowed_cpus->empty())
                        throw UsageError("--allowed-cpus is empty (give CPUs such as 0-15)");
                    break;
                case opt_gpus: {
                    CpuSet indices = CpuSet::parse(value);  // same list syntax as CPUs
                    if (indices.empty())
                        throw UsageError("--allowed-gpus is empty (give GPU indices such as 0-3)");
                    request.allowed_gpus = std::vector<int>(indices.begin(), indices.end());
                    break;
                }
                case opt_hca:
                    request.hcas.only.clear();
                    if (value != "auto")
                        for (const auto& item : split_commas(value))
                            request.hcas.only.push_back(HcaRequest::parse(item));
                    break;
                case opt_include: request.hcas.include = split_commas(value); break;
                case opt_exclude: request.hcas.exclude = split_commas(value); break;
                case opt_any_state: request.hcas.require_active = false; break;
                case opt_smt: request.smt = true; break;
                case opt_numbering:
                    if (value != "node" && value != "step")
                        throw UsageError("--gpu-numbering '" + value + "' is not a numbering (accepted: node, step)");
                    request.gpu_numbering = value == "node" ? GpuNumbering::node : GpuNumbering::step;
                    break;
                case opt_share: request.share_gpus = true; break;
                case ':':
                    throw UsageError(std::string("option '") + argv[optind - 1] + "' needs a value");
                default:
                    throw UsageError(std::string("unknown option '") + argv[optind - 1] +
                                     "' (see trellis-topo --help)");
            }
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
    }
    if (optind < argc) throw UsageError(std::string("unexpected argument '") + argv[optind] + "'");
    if (command == "plan" && !tasks_given) throw UsageError("plan needs --tasks N");

    Node node = load_node(xml);
    std::string out;
    if (command == "show") {
        out = json ? node_to_json(node).dump(2) + "\n" : format_node(node);
    } else {
        Plan plan;
        try {
            plan = make_plan(node, request);
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
        out = json ? plan_to_json(plan).dump(2) + "\n" : format_plan(plan);
    }
    std::cout << out;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "trellis-topo: error: " << e.what() << "\n";
    } catch (const TopologyError& e) {
        std::cerr << "trellis-topo: error: " << e.what() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "trellis-topo: error: " << e.what() << "\n";
    }
    return 2;
}
