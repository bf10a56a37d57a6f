// trellis-agent: the per-node agent. `launch` starts a node's ranks (natively or in a
// container), `prepare` and `release` manage a step's container for the plugin, `check`
// reports the node's health.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent/config.hpp"
#include "agent/container/image_policy.hpp"
#include "agent/container/runtime.hpp"
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
    "  prepare --id ID --image PATH --uid U --gid G --owner PID [--mounts SPEC]\n"
    "          [--system-mount SRC:DST[:ro]]... [--device PATH]... [--config FILE]\n"
    "      start a step's container once per node (idempotent); prints the pid to join\n"
    "  release --id ID [--detach] [--config FILE]\n"
    "      stop and remove a step's container; containers of dead steps are swept too;\n"
    "      --detach: in a process outside the caller's tree (slurmstepd's end of step)\n"
    "  check [--json] [--expect-gpus N] [--expect-hcas N] [--expect-container] [--xml FILE]\n"
    "      GPUs, HCA ports, GPUDirect RDMA, IPoIB, container runtimes; exit 1 on a problem\n"
    "\n"
    "See trellis-agent(8).\n";

unsigned to_id(const std::string& text, const std::string& flag) {
    std::size_t used = 0;
    unsigned long value = 0;
    try {
        value = std::stoul(text, &used);
    } catch (const std::exception&) {
    }
    if (used == 0 || used != text.size()) throw std::invalid_argument(flag + " '" + text + "' is not a number");
    return unsigned(value);
}

// prepare and release share their option reading: every option takes one value.
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
    bool uid = false, gid = false;
    for (const auto& [flag, value] :
         option_pairs(args, {"--id", "--image", "--uid", "--gid", "--owner", "--mounts", "--system-mount", "--device",
                             "--config"})) {
        if (flag == "--id") request.id = value;
        if (flag == "--image") request.image = value;
        if (flag == "--uid") request.user.uid = to_id(value, flag), uid = true;
        if (flag == "--gid") request.user.gid = to_id(value, flag), gid = true;
        if (flag == "--owner") request.owner = pid_t(to_id(value, flag));
        if (flag == "--mounts") request.user_mounts = value;
        if (flag == "--system-mount")
            for (const auto& mount : parse_mounts(value)) request.system_mounts.push_back(mount);
        if (flag == "--device") {
            if (!value.starts_with("/dev/") || value.find("..") != std::string::npos || value.find_first_of(",:") != std::string::npos)
                throw std::invalid_argument("--device '" + value + "' is not a device file under /dev");
            request.devices.push_back(value);
        }
        if (flag == "--config") config_path = value;
    }
    if (request.id.empty() || request.image.empty() || !uid || !gid || request.owner <= 0)
        throw std::invalid_argument("prepare needs --id, --image, --uid, --gid and --owner");
    pid_t pid = prepare_step_container(request, load_agent_config(config_path));
    std::printf("%d\n", pid);
    return 0;
}

// Runs `work` in a grandchild that has left this process's tree (its parent exits at once,
// so it belongs to init), and waits for its result. slurmctld's end of a job makes slurmd
// signal the processes of its steps while slurmstepd may still be in its exit hook (seen
// with proctrack/linuxproc): a release in that tree would be killed half-way and leave a
// container behind. (Under proctrack/cgroup the grandchild stays in the step's cgroup; the
// next agent call's sweep then removes what it could not.)
int detached(const std::function<int()>& work) {
    int result[2];
    if (::pipe(result) != 0) return work();
    pid_t child = ::fork();
    if (child == 0) {
        ::setsid();
        if (::fork() != 0) ::_exit(0);
        ::close(result[0]);
        ::signal(SIGPIPE, SIG_IGN);
        int status = 1;
        try {
            status = work();
        } catch (const std::exception& error) {
            std::fprintf(stderr, "trellis-agent release: %s\n", error.what());
        }
        unsigned char byte = static_cast<unsigned char>(status);
        if (::write(result[1], &byte, 1) != 1) {
        }
        ::_exit(status);
    }
    ::close(result[1]);
    if (child > 0) ::waitpid(child, nullptr, 0);
    unsigned char byte = 1;
    return ::read(result[0], &byte, 1) == 1 ? byte : 1;
}

int release(const std::vector<std::string>& args) {
    std::string id, config_path;
    bool detach = false;
    std::vector<std::string> rest;
    for (const auto& arg : args)
        if (arg == "--detach")
            detach = true;
        else
            rest.push_back(arg);
    for (const auto& [flag, value] : option_pairs(rest, {"--id", "--config"})) {
        if (flag == "--id") id = value;
        if (flag == "--config") config_path = value;
    }
    if (id.empty()) throw std::invalid_argument("release needs --id");
    auto config = load_agent_config(config_path);
    auto work = [&] {
        release_step_container(id, config);
        return 0;
    };
    return detach ? detached(work) : work();
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
        if (command == "release") return release(args);
        if (command == "check") return check_command(args);
        std::fprintf(stderr, "trellis-agent: unknown command '%s' (accepted: launch, prepare, release, check)\n",
                     command.c_str());
        return 2;
    } catch (const std::invalid_argument& error) {
        std::fprintf(stderr, "trellis-agent %s: %s\n", command.c_str(), error.what());
        return 2;
    } catch (const PolicyError& error) {
        std::fprintf(stderr, "trellis-agent %s: refused: %s\n", command.c_str(), error.what());
        return 3;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "trellis-agent %s: %s\n", command.c_str(), error.what());
        return 1;
    }
}
