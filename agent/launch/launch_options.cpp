#include "agent/launch/launch_options.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "topology/slurm_nodes.hpp"

namespace trellis::agent {

namespace {

int to_int(const std::string& text, const std::string& what, int low, int high) {
    std::size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || text.empty() || value < low || value > high)
        throw std::invalid_argument(what + " '" + text + "' is not a number from " + std::to_string(low) + " to " +
                                    std::to_string(high));
    return value;
}

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}

// A free port on this machine for a single-node run's rendezvous.
int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        throw std::runtime_error("cannot find a free port for the rendezvous");
    ::close(fd);
    return ntohs(address.sin_port);
}

}  // namespace

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
    LaunchOptions options;
    bool nproc_given = false;
    std::size_t i = 0;
    auto value = [&](const std::string& flag) -> std::string {
        if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
        return args[++i];
    };
    for (; i < args.size(); ++i) {
        const auto& arg = args[i];
        if (arg == "--") {
            options.command.assign(args.begin() + long(i) + 1, args.end());
            break;
        }
        if (arg == "--nproc-per-node") {
            options.nproc_per_node = to_int(value(arg), arg, 1, 4096);
            nproc_given = true;
        } else if (arg == "--image") {
            options.image = value(arg);
        } else if (arg == "--mounts") {
            options.mounts = value(arg);
        } else if (arg == "--bind") {
            options.bind = value(arg);
            if (options.bind != "closest" && options.bind != "none")
                throw std::invalid_argument("--bind '" + options.bind + "' (accepted: closest, none)");
        } else if (arg == "--config") {
            options.config_path = value(arg);
        } else if (arg == "--nnodes") {
            options.nnodes = to_int(value(arg), arg, 1, 1 << 20);
        } else if (arg == "--node-rank") {
            options.node_rank = to_int(value(arg), arg, 0, 1 << 20);
        } else if (arg == "--master") {
            options.master = value(arg);
        } else if (arg == "--grace") {
            options.grace_seconds = to_int(value(arg), arg, 0, 3600);
        } else if (!arg.empty() && arg[0] == '-') {
            throw std::invalid_argument("unknown option '" + arg + "' (see trellis-agent launch --help)");
        } else {
            options.command.assign(args.begin() + long(i), args.end());
            break;
        }
    }
    if (!nproc_given) throw std::invalid_argument("--nproc-per-node is required");
    if (options.command.empty()) throw std::invalid_argument("no command to launch (after --)");
    return options;
}

NodePlace find_node_place(const LaunchOptions& options) {
    NodePlace place;
    if (options.nnodes || options.node_rank || !options.master.empty()) {
        place = {options.nnodes.value_or(1), options.node_rank.value_or(0), options.master, "options"};
    } else if (env("TRELLIS_NNODES")) {
        place.nnodes = to_int(env("TRELLIS_NNODES"), "TRELLIS_NNODES", 1, 1 << 20);
        place.node_rank = env("TRELLIS_NODE_RANK") ? to_int(env("TRELLIS_NODE_RANK"), "TRELLIS_NODE_RANK", 0, 1 << 20) : 0;
        place.master = env("TRELLIS_MASTER") ? env("TRELLIS_MASTER") : "";
        place.source = "environment";
    } else if (env("SLURM_NNODES") && env("SLURM_NODEID") && env("SLURM_JOB_ID")) {
        place.nnodes = to_int(env("SLURM_NNODES"), "SLURM_NNODES", 1, 1 << 20);
        place.node_rank = to_int(env("SLURM_NODEID"), "SLURM_NODEID", 0, 1 << 20);
        const char* nodes = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
        if (!nodes) throw std::runtime_error("SLURM_NNODES is set but SLURM_STEP_NODELIST is not");
        // A port per job and step, so that steps sharing a node do not collide.
        long job = std::atol(env("SLURM_JOB_ID")), step = env("SLURM_STEP_ID") ? std::atol(env("SLURM_STEP_ID")) : 0;
        place.master = topology::first_node_address(nodes) + ":" + std::to_string(30000 + (job * 131 + step * 17) % 10000);
        place.source = "slurm";
    } else {
        place.master = "127.0.0.1:" + std::to_string(free_port());
        place.source = "this node";
    }
    if (place.node_rank >= place.nnodes)
        throw std::runtime_error("node rank " + std::to_string(place.node_rank) + " is outside " +
                                 std::to_string(place.nnodes) + " nodes");
    if (place.master.empty() && place.nnodes > 1)
        throw std::runtime_error("several nodes but no master (--master HOST:PORT or TRELLIS_MASTER)");
    if (place.master.empty()) place.master = "127.0.0.1:" + std::to_string(free_port());
    return place;
}

}  // namespace trellis::agent
