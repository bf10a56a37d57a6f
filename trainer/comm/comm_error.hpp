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
    PeerFailure(int rank, const std::string& host, const std::string& what)
        : CommError("rank " + std::to_string(rank) + " (" + host + ") " + what), rank(rank), host(host) {}
    const char* topic() const override { return "stopping"; }
    int rank;
    std::string host;
};

}  // namespace trellis::comm
