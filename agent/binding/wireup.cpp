// SPDX-License-Identifier: Apache-2.0
#include "agent/binding/wireup.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"

namespace trellis::agent {
namespace {

const char* const accepted = "accepted: none, torch, tf[:chief][:ps=N], or torch,tf...";

void parse_tf(const std::string& item, WireupChoice& choice) {
    choice.tf = true;
    auto parts = cli::split(item, ':');
    for (auto part = parts.begin() + 1; part != parts.end(); ++part) {  // after "tf"
        if (*part == "chief") {
            choice.tf_chief = true;
        } else if (part->starts_with("ps=")) {
            choice.tf_ps = cli::parse_int(part->substr(3), "ps= in '" + item + "'", 1, 999);
        } else {
            throw UsageError("'" + *part + "' in '" + item + "' is not a TensorFlow role (accepted: chief, ps=N)");
        }
    }
}

std::string tf_config(const WireupChoice& choice, const StepLayout& layout) {
    int chiefs = choice.tf_chief ? 1 : 0;
    int world = static_cast<int>(layout.rank_addresses.size());
    if (chiefs + choice.tf_ps >= world)
        throw UsageError("TF_CONFIG: " + std::to_string(chiefs + choice.tf_ps) +
                         " chief and parameter-server tasks leave no worker among " + std::to_string(world) + " tasks");
    nlohmann::json cluster = nlohmann::json::object();
    std::string type;
    int index = 0;
    for (int rank = 0; rank < world; ++rank) {
        std::string role = rank < chiefs ? "chief" : rank < chiefs + choice.tf_ps ? "ps" : "worker";
        if (rank == layout.rank) type = role, index = static_cast<int>(cluster[role].size());
        cluster[role].push_back(layout.rank_addresses[static_cast<size_t>(rank)]);
    }
    return nlohmann::json{{"cluster", cluster}, {"task", {{"type", type}, {"index", index}}}}.dump();
}

}  // namespace

WireupChoice parse_wireup(const std::string& value) {
    WireupChoice choice;
    choice.torch = false;
    for (const auto& item : cli::split(value)) {
        if (item == "none" && value == "none") return choice;
        if (item == "torch" && !choice.torch)
            choice.torch = true;
        else if ((item == "tf" || item.rfind("tf:", 0) == 0) && !choice.tf)
            parse_tf(item, choice);
        else
            throw UsageError("'" + value + "' is not a wireup (" + accepted + ")");
    }
    return choice;
}

std::vector<std::string> rank_addresses(const std::vector<std::string>& node_addresses,
                                        const std::vector<int>& rank_nodes, int port) {
    // Counted per address, not per node: nodes that share an address (several slurmd on one
    // host) must not hand out the same port twice.
    std::vector<std::string> addresses;
    std::map<std::string, int> placed;
    for (int node : rank_nodes) {
        if (node < 0 || node >= static_cast<int>(node_addresses.size()))
            throw UsageError("Slurm's tasks per node name more nodes than its node list");
        const std::string& host = node_addresses[static_cast<size_t>(node)];
        addresses.push_back(host + ":" + std::to_string(port + 1 + placed[host]++));
    }
    return addresses;
}

std::vector<int> rank_nodes(const std::string& tasks_per_node, const std::string& distribution) {
    // "2(x3),1" -> 2,2,2,1. At most max_ranks ranks in all: more would be no Slurm step.
    constexpr long max_ranks = 1L << 22;
    std::vector<int> counts;
    long ranks = 0;
    auto items = tasks_per_node.empty() ? std::vector<std::string>{} : cli::split(tasks_per_node);
    for (const auto& item : items) {
        int count = 0, repeat = 1;
        char open = 0, x = 0;
        std::istringstream parts(item);
        if (!(parts >> count) || count < 0 ||
            ((parts >> open) && (open != '(' || !(parts >> x >> repeat) || x != 'x')) || repeat < 1 ||
            (ranks += long(count) * repeat) > max_ranks || long(counts.size()) + repeat > max_ranks)
            throw UsageError("cannot read Slurm's tasks per node '" + tasks_per_node + "'");
        counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    }
    // "block:cyclic,pack": the first level decides the nodes; ",pack" and ",nopack" (or either
    // alone, meaning the default block) only say how tasks are packed.
    std::string first_level = distribution.substr(0, distribution.find(':'));
    first_level = first_level.substr(0, first_level.find(','));
    if (first_level == "pack" || first_level == "nopack") first_level = "block";
    std::vector<int> nodes;
    if (first_level.empty() || first_level == "block") {
        for (size_t n = 0; n < counts.size(); ++n) nodes.insert(nodes.end(), static_cast<size_t>(counts[n]), int(n));
    } else if (first_level == "cyclic") {
        std::vector<int> left = counts;
        for (bool placed = true; placed;) {
            placed = false;
            for (size_t n = 0; n < left.size(); ++n)
                if (left[n] > 0) --left[n], nodes.push_back(int(n)), placed = true;
        }
    } else {
        throw UsageError("the task distribution '" + distribution +
                         "' does not say on which node each rank runs (accepted: block, cyclic)");
    }
    return nodes;
}

std::map<std::string, std::string> wireup_env(const WireupChoice& choice, const StepLayout& layout) {
    std::map<std::string, std::string> env;
    if (choice.torch) {
        env[env::master_addr.name] = layout.master_addr;
        env[env::master_port.name] = std::to_string(layout.port);
        env[env::torch_rank.name] = std::to_string(layout.rank);
        env[env::torch_world_size.name] = std::to_string(layout.world_size);
        env[env::torch_local_rank.name] = std::to_string(layout.local_rank);
        env[env::torch_local_world_size.name] = std::to_string(layout.local_size);
        env[env::torch_group_rank.name] = env[env::torch_node_rank.name] = std::to_string(layout.node_rank);
        env[env::torch_group_world_size.name] = std::to_string(layout.nnodes);
    }
    if (choice.tf) env[env::tf_config.name] = tf_config(choice, layout);
    std::string names;
    for (const auto& [name, value] : env) names += (names.empty() ? "" : ",") + name;
    if (!names.empty()) env[env::wireup_set.name] = names;
    return env;
}

}  // namespace trellis::agent
