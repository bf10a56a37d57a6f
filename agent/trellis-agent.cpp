// trellis-agent: the per-node agent. `launch` starts a node's ranks (natively or in a
// container), `prepare` makes a step's container for the plugin as the job's user, `check`
// reports the node's health.
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent/config.hpp"
#include "agent/container/image_policy.hpp"
#include "agent/container/sif_container.hpp"
#include "agent/container/step_container.hpp"
#include "agent/health/node_check.hpp"
#include "agent/launch/launch_command.hpp"
#include "config.h"

using namespace trellis::agent;

namespace {

const char* usage =
    "usage: trellis-agent COMMAND [OPTIONS]\n"
    "\n"
    "  launch --nproc-per-node N [--image PATH] [--mounts SRC:DST[:ro],...] [--bind closest|none]\n"
    "         [--nnodes N --node-rank R --master HOST:PORT] [--grace S] [--config FILE] -- CMD ARGS...\n"
    "      start this node's ranks of a job, bound to their GPUs, HCAs and CPUs, natively or in\n"
    "      the image; output prefixed with the rank; one failed rank stops the others\n"
    "  prepare --image PATH [--mounts SPEC] [--system-mount FOLDER]... [--device PATH]...\n"
    "          [--config FILE]\n"
    "      as the calling user (never root): make a step's container around this process,\n"
    "      print \"ready\" (or \"ready hold\") and wait until stdin ends (its caller holds\n"
    "      the container's namespaces meanwhile); --system-mount PATH[:ro]\n"
    "  check [--json] [--expect-gpus N] [--expect-hcas N] [--expect-container] [--xml FILE]\n"
    "      GPUs, HCA ports, GPUDirect RDMA, IPoIB, container runtimes; exit 1 on a problem\n"
    "\n"
    "See trellis-agent(8).\n";

// prepare's options each take one value, so a value can never be read as a flag.
std::vector<std::pair<std::string, std::string>> option_pairs(const std::vector<std::string>& args,
                                                              const std::vector<std::string>& known) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (std::size_t i = 0; i < args.size(); i += 2) {
        if (std::find(known.begin(), known.end(), args[i]) == known.end())
            throw std::invalid_argument("unknown option '" + args[i] + "' (see trellis-agent --help)");
        if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
        pairs.emplace_back(args[i], args[i + 1]);
    }
    return pairs;
}

int prepare(const std::vector<std::string>& args) {
    StepContainerRequest request;
    std::string config_path;
    for (const auto& [flag, value] :
         option_pairs(args, {"--image", "--mounts", "--system-mount", "--device", "--config"})) {
        if (flag == "--image") request.image = value;
        if (flag == "--mounts") request.user_mounts = value;
        if (flag == "--system-mount") request.system_mounts.push_back(value);
        if (flag == "--device") request.devices.push_back(value);
        if (flag == "--config") config_path = value;
    }
    if (request.image.empty()) throw std::invalid_argument("prepare needs --image");
    auto spec = checked_container_spec(request, load_agent_config(config_path));
    pid_t helper = enter_container(spec);
    // "ready hold": the caller keeps this end open while the container is used (Apptainer
    // must go on running); "ready": only until it has opened the namespaces.
    std::fputs(helper ? "ready hold\n" : "ready\n", stdout);
    std::fflush(stdout);
    char buffer[64];
    while (::read(0, buffer, sizeof buffer) > 0) {
    }
    if (helper) stop_apptainer(helper);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::fputs(usage, args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::printf("trellis-agent %s\nconfiguration: %s\n", PACKAGE_VERSION, TRELLIS_CONFIG_PATH);
        return 0;
    }
    std::string command = args[0];
    args.erase(args.begin());
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
        std::fputs(usage, stdout);
        return 0;
    }
    try {
        if (command == "launch") return launch_command(args);
        if (command == "prepare") return prepare(args);
        if (command == "check") return check_command(args);
        std::fprintf(stderr, "trellis-agent: unknown command '%s' (accepted: launch, prepare, check)\n",
                     command.c_str());
        return 2;
    } catch (const std::invalid_argument& error) {
        std::fprintf(stderr, "trellis-agent %s: %s\n", command.c_str(), error.what());
        return 2;
    } catch (const PolicyError& error) {
        std::fprintf(stderr, "trellis-agent %s: refused: %s\n", command.c_str(), error.what());
        return 3;
    } catch (const ContainerError& error) {
        std::fprintf(stderr, "trellis-agent %s: container: %s\n", command.c_str(), error.what());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "trellis-agent %s: %s\n", command.c_str(), error.what());
        return 1;
    }
}
