// SPDX-License-Identifier: Apache-2.0
// Failures of communication. A PeerFailure names the rank and host that failed, so that every
// rank can say which peer brought the job down instead of hanging.
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace trellis::comm {

struct CommError : Error {
    using Error::Error;
    const char* topic() const override { return "communication"; }
};

struct PeerFailure : CommError {
    // silent: the peer sent nothing, not even a heartbeat, for the whole timeout (the program
    // names its option for it; the transport knows only the seconds).
    PeerFailure(int rank, const std::string& host, const std::string& what, bool silent = false)
        : CommError("rank " + std::to_string(rank) + " (" + host + ") " + what),
          rank(rank),
          host(host),
          silent(silent) {}
    const char* topic() const override { return "stopping"; }
    int rank;
    std::string host;
    bool silent;
};

}  // namespace trellis::comm
