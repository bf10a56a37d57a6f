#include "trainer/comm/wireup.hpp"

#include "topology/slurm_nodes.hpp"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <cstdlib>
#include <stdexcept>

#include "common/error.hpp"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/pmix_wireup.hpp"
#include "trainer/comm/rendezvous.hpp"

namespace trellis::comm {

namespace {

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}

int env_int(const char* name, const std::string& wireup) {
    const char* text = env(name);
    if (!text) throw CommError(wireup + " wireup: " + name + " is not set");
    int value = -1;
    auto [end, error] = std::from_chars(text, text + std::strlen(text), value);
    if (error != std::errc() || *end != '\0' || value < 0)
        throw CommError(wireup + " wireup: " + name + "='" + text + "' is not a non-negative integer");
    return value;
}

std::string this_host() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return host;
}

class SingleProcess : public Wireup {
public:
    SingleProcess() { identity_.host = this_host(); }
    std::string name() const override { return "single process"; }
    std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
    std::string reachable_address() const override { return "127.0.0.1"; }
};

std::uint16_t rendezvous_port(const std::string& wireup) {
    if (const char* text = env("TRELLIS_RENDEZVOUS_PORT")) {
        int port = std::atoi(text);
        if (port < 1 || port > 65535) throw CommError(wireup + " wireup: TRELLIS_RENDEZVOUS_PORT='" + text + "'");
        return std::uint16_t(port);
    }
    // Slurm's reserved ports for the step (MpiParams=ports=...) when configured; otherwise a
    // port derived from the job and step, so that concurrent steps on a node differ, and
    // below Linux's ephemeral range (32768 and up) so that no outgoing connection holds it.
    if (const char* reserved = env("SLURM_STEP_RESV_PORTS")) return std::uint16_t(std::atoi(reserved));
    long job = env("SLURM_JOB_ID") ? std::atol(env("SLURM_JOB_ID")) : 0;
    long step = env("SLURM_STEP_ID") ? std::atol(env("SLURM_STEP_ID")) : 0;
    return std::uint16_t(21000 + (job * 131 + step * 17) % 10000);
}

std::unique_ptr<Wireup> slurm_wireup(std::chrono::seconds timeout) {
    Identity identity;
    identity.rank = env_int("SLURM_PROCID", "slurm");
    identity.size = env_int("SLURM_NTASKS", "slurm");
    identity.local_rank = env("SLURM_LOCALID") ? env_int("SLURM_LOCALID", "slurm") : 0;
    identity.node = env("SLURM_NODEID") ? env_int("SLURM_NODEID", "slurm") : 0;
    identity.host = env("SLURMD_NODENAME") ? env("SLURMD_NODENAME") : this_host();
    const char* nodelist = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_NODELIST");
    if (!nodelist) throw CommError("slurm wireup: SLURM_STEP_NODELIST is not set");
    std::string master;
    try {
        master = topology::first_node_address(nodelist);
    } catch (const UsageError& error) {
        throw CommError(std::string("slurm wireup: SLURM_STEP_NODELIST: ") + error.what());
    }
    return std::make_unique<RendezvousWireup>("slurm", identity, master, rendezvous_port("slurm"),
                                              timeout);
}

std::unique_ptr<Wireup> env_wireup(std::chrono::seconds timeout) {
    Identity identity;
    identity.rank = env_int("TRELLIS_RANK", "env");
    identity.size = env_int("TRELLIS_WORLD_SIZE", "env");
    identity.local_rank = env("TRELLIS_LOCAL_RANK") ? env_int("TRELLIS_LOCAL_RANK", "env") : 0;
    identity.host = this_host();
    const char* master = env("TRELLIS_MASTER");
    if (!master) throw CommError("env wireup: TRELLIS_MASTER (host:port of rank 0) is not set");
    std::string text = master;
    auto colon = text.rfind(':');
    int port = colon == std::string::npos ? 0 : std::atoi(text.c_str() + colon + 1);
    if (colon == std::string::npos || port < 1 || port > 65535)
        throw CommError("env wireup: TRELLIS_MASTER='" + text + "' is not host:port");
    return std::make_unique<RendezvousWireup>("env", identity, text.substr(0, colon), std::uint16_t(port), timeout);
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

std::unique_ptr<Wireup> make_wireup(WireupKind kind, std::chrono::seconds timeout) {
    if (kind == WireupKind::pmix) return std::make_unique<PmixWireup>();
    if (kind == WireupKind::slurm) return slurm_wireup(timeout);
    if (kind == WireupKind::env) return env_wireup(timeout);
    if (PmixWireup::available()) return std::make_unique<PmixWireup>();
    if (env("SLURM_PROCID") && env("SLURM_NTASKS") && std::atoi(env("SLURM_NTASKS")) > 1) return slurm_wireup(timeout);
    if (env("TRELLIS_RANK") && env("TRELLIS_WORLD_SIZE")) return env_wireup(timeout);
    return single_process_wireup();
}

}  // namespace trellis::comm
