// Failures of communication. A PeerFailure names the rank and host that failed, so that every
// rank can say which peer brought the job down instead of hanging.
#pragma once

#include <stdexcept>
#include <string>

namespace trellis::comm {

struct CommError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct PeerFailure : CommError {
    PeerFailure(int rank, const std::string& host, const std::string& what)
        : CommError("rank " + std::to_string(rank) + " (" + host + ") " + what), rank(rank), host(host) {}
    int rank;
    std::string host;
};

}  // namespace trellis::comm
