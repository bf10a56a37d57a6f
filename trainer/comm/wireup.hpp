// SPDX-License-Identifier: Apache-2.0
// How the ranks of a job find each other: who am I (rank, size, local rank, node) and an
// all-gather of small blobs (transport endpoints). In order of preference: PMIx, the Slurm
// environment with a TCP rendezvous on the first node, or the plain environment
// (TRELLIS_RANK, TRELLIS_WORLD_SIZE, TRELLIS_LOCAL_RANK, TRELLIS_MASTER=host:port).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "trainer/comm/job_secret.hpp"

namespace trellis::comm {

struct Identity {
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int node = 0;
    std::string host;  // this rank's node, for messages
};

class Wireup {
public:
    virtual ~Wireup() = default;
    virtual std::string name() const = 0;
    const Identity& identity() const { return identity_; }
    // Collective: every rank passes its blob and gets all of them, indexed by rank.
    virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
    // An address of this node that the other ranks can reach.
    virtual std::string reachable_address() const = 0;
    // The step's secret, which every connection between its ranks proves (none for one rank).
    const JobSecret& secret() const { return secret_; }

protected:
    Identity identity_;
    JobSecret secret_;
};

enum class WireupKind { automatic, pmix, slurm, env };
// Its spellings: auto, pmix, slurm, env.
const cli::Choices<WireupKind>& wireup_kinds();

// `automatic` takes PMIx when the process was started by a PMIx
// server, else Slurm's variables, else TRELLIS_*, else a single process. Throws CommError
// naming what is missing, and Refused for ranks without the step's secret (TRELLIS_SECRET).
std::unique_ptr<Wireup> make_wireup(WireupKind kind, std::chrono::seconds timeout);

// This process's rank as its launcher's environment gives it, looked at as make_wireup's
// `automatic` does (PMIX_RANK, SLURM_PROCID, TRELLIS_RANK), without meeting anyone: for
// deciding who reports an error found before the wireup. 0 when none is set or readable.
int rank_before_wireup();

// A wireup of one: rank 0 of 1.
std::unique_ptr<Wireup> single_process_wireup();

}  // namespace trellis::comm
