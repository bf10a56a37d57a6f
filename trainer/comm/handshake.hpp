// SPDX-License-Identifier: Apache-2.0
// How the two ends of every connection between ranks prove that both hold the step's secret
// (job_secret.hpp), before either acts on anything the other says:
//
//   acceptor -> caller    challenge: a magic and the acceptor's nonce
//   caller   -> acceptor  claim: what the connection is for (purpose, caller, callee, stream,
//                         the world's size), the caller's nonce, a short payload, and an HMAC
//                         over all of it and both nonces
//   acceptor -> caller    proof: an HMAC over the same, under another label
//
// Neither HMAC can be made without the secret, nor replayed (each covers the other side's fresh
// nonce), nor turned around (each has its own label). A process that cannot prove it is dropped
// by the other end, which goes on waiting for the real one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/job_secret.hpp"
#include "trainer/comm/socket.hpp"

namespace trellis::comm {

enum class Purpose : std::uint32_t {
    join = 1,    // a rank tells rank 0 where it listens (rendezvous.hpp)
    parent = 2,  // a rank passes the rendezvous table to its child in the tree
    link = 3,    // a TCP link's control (stream -1) or data connection (tcp_links.hpp)
};

struct Claim {
    Purpose purpose = Purpose::link;
    std::int32_t caller = 0, callee = 0, stream = -1, size = 0;
    std::string payload;  // at most longest_payload bytes
};
inline constexpr std::size_t longest_payload = 256;

// The other end did not prove the secret (an impostor, or a process squatting on a rank's port).
struct NotProven : CommError {
    using CommError::CommError;
};

// The caller's side on a connected socket: reads the challenge (the acceptor may keep the
// caller waiting in its queue until `challenge_deadline`), sends the claim, checks the proof,
// which comes at once or not at all (`proof_time`). Throws NotProven, or CommError when the
// connection ends or a deadline passes first.
inline constexpr auto proof_time = std::chrono::seconds(5);
void prove_claim(const Socket& socket, const JobSecret& secret, const Claim& claim,
                 Clock::time_point challenge_deadline, const std::string& what);

// The acceptor's side, fed whatever bytes arrive (the watcher thread must never block on a
// caller): the challenge to send first, then the claim read piece by piece, then the proof.
class ClaimReader {
public:
    explicit ClaimReader(const JobSecret& secret);

    static constexpr std::size_t challenge_size = 4 + sizeof(Nonce);
    std::array<std::uint8_t, challenge_size> challenge() const;
    // How many more bytes the claim needs (0: it is whole): read no more than this, so that
    // nothing the caller sends after its claim is taken.
    std::size_t wanted() const;
    // Takes `size` bytes (at most wanted()); false when they make a claim that is malformed.
    bool take(const std::uint8_t* data, std::size_t size);
    // Once whole: whether its HMAC proves the secret; then the claim, and the proof to send back.
    bool proven() const;
    const Claim& claim() const { return claim_; }
    Mac proof() const;

private:
    std::vector<std::uint8_t> signed_by_both() const;  // what both HMACs cover, once the claim is whole

    const JobSecret* secret_;
    Nonce nonce_;
    std::string bytes_;  // the claim so far
    Claim claim_;
};

}  // namespace trellis::comm
