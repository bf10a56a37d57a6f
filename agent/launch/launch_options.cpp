// SPDX-License-Identifier: Apache-2.0
#include "agent/launch/launch_options.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/host.hpp"
#include "agent/image/settings.hpp"
#include "topology/plan.hpp"
#include "slurm/node_list.hpp"

namespace trellis::agent {

namespace {

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

int node_count(const std::string& text, const std::string& what, int low) {
    return cli::parse_int(text, what, low, 1 << 20);
}

cli::OptionTable launch_table(LaunchOptions& o, bool& nproc_given) {
    cli::OptionTable table("trellis-agent launch --help");
    table
        .value("--nproc-per-node", "N", "ranks on this node (required)",
               [&](auto& v) {
                   o.nproc_per_node = cli::parse_int(v, "--nproc-per-node", 1, 4096);
                   nproc_given = true;
               })
        .value("--image", "PATH", "run the ranks in this OCI bundle or .sif image", [&](auto& v) { o.image = v; })
        .value("--mounts", "SPEC", "SRC:DST[:ro],... into the image", [&](auto& v) { o.mounts = v; })
        .flag("--writable", "give the image's root a throw-away writable layer", [&] { o.writable = true; })
        .value("--env", "NAME,...", "these variables keep their value over the image's Env",
               [&](auto& v) { o.keep_env = parse_env_names(v); })
        .flag("--entrypoint", "run the image's Entrypoint with the command as its arguments",
              [&] { o.entrypoint = true; })
        .value("--bind", "B", "closest or none (default: the configuration's, closest)",
               [&](auto& v) { o.bind = topology::parse_policy(v); })
        .value("--nnodes", "N", "nodes of the job (default: Slurm's or 1)",
               [&](auto& v) { o.nnodes = node_count(v, "--nnodes", 1); })
        .value("--node-rank", "R", "this node's index", [&](auto& v) { o.node_rank = node_count(v, "--node-rank", 0); })
        .value("--master", "HOST:PORT", "rank 0's rendezvous address", [&](auto& v) { o.master = v; })
        .value("--grace", "S", "seconds the other ranks get after one fails (default 10)",
               [&](auto& v) { o.grace_seconds = cli::parse_int(v, "--grace", 0, 3600); })
        .value("--config", "FILE",
               "the configuration (default: the plugin's, from its plugstack.conf line, else the installed "
               "trellis.toml)",
               [&](auto& v) { o.config_path = v; })
        .flag("--verbose", "print this node's binding table and where the configuration came from",
              [&] { o.verbose = true; });
    return table;
}

}  // namespace

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
    LaunchOptions options;
    bool nproc_given = false;
    options.command = launch_table(options, nproc_given).parse(args, cli::OptionTable::Rest::command);
    if (!nproc_given) throw UsageError("--nproc-per-node is required");
    if (options.command.empty()) throw UsageError("no command to launch (after --)");
    return options;
}

std::string launch_help() {
    LaunchOptions ignored;
    bool given = false;
    return "usage: trellis-agent launch --nproc-per-node N [OPTIONS] -- COMMAND ARGS...\n\n"
           "Starts this node's ranks of a job, bound to their GPUs, HCAs and CPUs, natively or in\n"
           "a container; output is prefixed with the rank; one failed rank stops the others.\n\n" +
           launch_table(ignored, given).help();
}

NodePlace find_node_place(const LaunchOptions& options) {
    NodePlace place;
    if (options.nnodes || options.node_rank || !options.master.empty()) {
        place = {options.nnodes.value_or(1), options.node_rank.value_or(0), options.master, "options"};
    } else if (env_value(env::nnodes.name)) {
        place.nnodes = node_count(env_value(env::nnodes.name), env::nnodes.name, 1);
        place.node_rank =
            env_value(env::node_rank.name) ? node_count(env_value(env::node_rank.name), env::node_rank.name, 0) : 0;
        place.master = env_value(env::master.name) ? env_value(env::master.name) : "";
        place.source = "environment";
    } else if (env_value("SLURM_NNODES") && env_value("SLURM_NODEID") && env_value("SLURM_JOB_ID")) {
        place.nnodes = node_count(env_value("SLURM_NNODES"), "SLURM_NNODES", 1);
        place.node_rank = node_count(env_value("SLURM_NODEID"), "SLURM_NODEID", 0);
        const char* nodes =
            env_value("SLURM_STEP_NODELIST") ? env_value("SLURM_STEP_NODELIST") : env_value("SLURM_JOB_NODELIST");
        if (!nodes) throw std::runtime_error("SLURM_NNODES is set but SLURM_STEP_NODELIST is not");
        // A port per job and step, so that steps sharing a node do not collide (the trainer's
        // own rendezvous uses ports from 21000 to 29999).
        place.master = slurm::first_node_address(nodes) + ":" + std::to_string(step_port(30000, 32767));
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
