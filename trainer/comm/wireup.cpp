// SPDX-License-Identifier: Apache-2.0
#include "common/environment.hpp"
#include "trainer/comm/wireup.hpp"

#include <charconv>
#include <cstring>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/host.hpp"
#include "slurm/node_list.hpp"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/pmix_wireup.hpp"
#include "trainer/comm/rendezvous.hpp"

namespace trellis::comm {

namespace {

const char* env(const char* name) { return env_value(name); }

int env_int(const char* name, const std::string& wireup) {
    const char* text = env(name);
    if (!text) throw CommError(wireup + " wireup: " + name + " is not set");
    try {
        return cli::parse_int(text, name, 0);
    } catch (const UsageError& error) {
        throw UsageError(wireup + " wireup: " + error.what());
    }
}

class SingleProcess : public Wireup {
public:
    SingleProcess() { identity_.host = host_name(); }
    std::string name() const override { return "single process"; }
    std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
    std::string reachable_address() const override { return "127.0.0.1"; }
};

std::uint16_t rendezvous_port() {
    if (const char* text = env(env::rendezvous_port.name))
        return cli::parse_int<std::uint16_t>(text, env::rendezvous_port.name, 1);
    // Slurm's reserved ports for the step (MpiParams=ports=...; "FIRST-LAST") when configured;
    // otherwise a port derived from the job and step.
    if (const char* reserved = env("SLURM_STEP_RESV_PORTS"))
        return cli::parse_int<std::uint16_t>(cli::split(reserved, '-').front(), "SLURM_STEP_RESV_PORTS", 1);
    return static_cast<std::uint16_t>(step_port(21000, 29999));
}

std::unique_ptr<Wireup> slurm_wireup(std::chrono::seconds timeout) {
    Identity identity;
    identity.rank = env_int("SLURM_PROCID", "slurm");
    identity.size = env_int("SLURM_NTASKS", "slurm");
    identity.local_rank = env("SLURM_LOCALID") ? env_int("SLURM_LOCALID", "slurm") : 0;
    identity.node = env("SLURM_NODEID") ? env_int("SLURM_NODEID", "slurm") : 0;
    identity.host = node_name();
    const char* nodelist = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_NODELIST");
    if (!nodelist) throw CommError("slurm wireup: SLURM_STEP_NODELIST is not set");
    std::string master;
    try {
        master = slurm::first_node_address(nodelist);
    } catch (const UsageError& error) {
        throw CommError(std::string("slurm wireup: SLURM_STEP_NODELIST: ") + error.what());
    }
    auto secret = step_secret_from_environment(
        "slurm", identity.size,
        "the trellis plugin sets it for every srun step: is spank_trellis.so in plugstack.conf?");
    return std::make_unique<RendezvousWireup>("slurm", identity, std::move(secret), master, rendezvous_port(), timeout);
}

std::unique_ptr<Wireup> env_wireup(std::chrono::seconds timeout) {
    Identity identity;
    identity.rank = env_int(env::rank.name, "env");
    identity.size = env_int(env::world_size.name, "env");
    identity.local_rank = env(env::local_rank.name) ? env_int(env::local_rank.name, "env") : 0;
    identity.host = host_name();
    const char* master = env(env::master.name);
    if (!master) throw CommError("env wireup: TRELLIS_MASTER (host:port of rank 0) is not set");
    std::string text = master;
    auto colon = text.rfind(':');
    if (colon == std::string::npos) throw UsageError("TRELLIS_MASTER='" + text + "' is not host:port");
    auto port = cli::parse_int<std::uint16_t>(text.substr(colon + 1), "the port of TRELLIS_MASTER", 1);
    auto secret = step_secret_from_environment("env", identity.size,
                                               "trellis-agent launch sets it; started otherwise, the ranks need one");
    return std::make_unique<RendezvousWireup>("env", identity, std::move(secret), text.substr(0, colon), port, timeout);
}

}  // namespace

std::unique_ptr<Wireup> single_process_wireup() { return std::make_unique<SingleProcess>(); }

const cli::Choices<WireupKind>& wireup_kinds() {
    static const cli::Choices<WireupKind> choices{{{"auto", WireupKind::automatic},
                                                   {"pmix", WireupKind::pmix},
                                                   {"slurm", WireupKind::slurm},
                                                   {"env", WireupKind::env}}};
    return choices;
}

int rank_before_wireup() {
    for (const char* name : {"PMIX_RANK", "SLURM_PROCID", env::rank.name})
        if (const char* value = env(name)) {
            int rank = 0;
            auto [end, error] = std::from_chars(value, value + std::strlen(value), rank);
            return error == std::errc() && *end == '\0' ? rank : 0;
        }
    return 0;
}

std::unique_ptr<Wireup> make_wireup(WireupKind kind, std::chrono::seconds timeout) {
    if (kind == WireupKind::pmix) return std::make_unique<PmixWireup>();
    if (kind == WireupKind::slurm) return slurm_wireup(timeout);
    if (kind == WireupKind::env) return env_wireup(timeout);
    if (PmixWireup::available()) return std::make_unique<PmixWireup>();
    if (env("SLURM_PROCID") && env("SLURM_NTASKS") && env_int("SLURM_NTASKS", "slurm") > 1)
        return slurm_wireup(timeout);
    if (env(env::rank.name) && env(env::world_size.name)) return env_wireup(timeout);
    return single_process_wireup();
}

}  // namespace trellis::comm
