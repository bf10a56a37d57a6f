// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/handshake.hpp"

#include <cstring>
#include <vector>

namespace trellis::comm {

namespace {

constexpr std::uint32_t challenge_magic = 0x544c4348;  // "TLCH"
constexpr std::uint32_t claim_magic = 0x544c434c;      // "TLCL"
constexpr std::string_view claim_label = "trellis claim 1", proof_label = "trellis proof 1";

// The claim's fixed part: magic, purpose, caller, callee, stream, size, the caller's nonce, the
// payload's length, the HMAC. Integers are little-endian.
constexpr std::size_t claim_head = 4 * 6 + sizeof(Nonce) + 4 + sizeof(Mac);
constexpr std::size_t fields_at = 4, nonce_at = 24, length_at = nonce_at + sizeof(Nonce), mac_at = length_at + 4;

void put32(std::uint8_t* at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) at[i] = std::uint8_t(value >> (8 * i));
}
std::uint32_t get32(const std::uint8_t* at) {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= std::uint32_t(at[i]) << (8 * i);
    return value;
}

// What both HMACs cover: the claim's fields, both nonces, the payload.
std::vector<std::uint8_t> signed_part(const Claim& claim, const Nonce& acceptor, const Nonce& caller) {
    std::vector<std::uint8_t> bytes(4 * 6);
    put32(&bytes[0], std::uint32_t(claim.purpose));
    put32(&bytes[4], std::uint32_t(claim.caller));
    put32(&bytes[8], std::uint32_t(claim.callee));
    put32(&bytes[12], std::uint32_t(claim.stream));
    put32(&bytes[16], std::uint32_t(claim.size));
    put32(&bytes[20], std::uint32_t(claim.payload.size()));
    bytes.insert(bytes.end(), acceptor.begin(), acceptor.end());
    bytes.insert(bytes.end(), caller.begin(), caller.end());
    bytes.insert(bytes.end(), claim.payload.begin(), claim.payload.end());
    return bytes;
}

}  // namespace

void prove_claim(const Socket& socket, const JobSecret& secret, const Claim& claim,
                 Clock::time_point challenge_deadline, const std::string& what) {
    if (claim.payload.size() > longest_payload) throw CommError(what + ": a claim's payload is too long");
    std::array<std::uint8_t, ClaimReader::challenge_size> challenge{};
    socket.recv_all(challenge.data(), challenge.size(), challenge_deadline, what);
    auto deadline = Clock::now() + proof_time;
    if (get32(challenge.data()) != challenge_magic)
        throw NotProven(what + ": the process there does not greet as a rank of trellis");
    Nonce acceptor{}, mine = fresh_nonce();
    std::memcpy(acceptor.data(), challenge.data() + 4, acceptor.size());
    auto part = signed_part(claim, acceptor, mine);
    std::vector<std::uint8_t> message(claim_head);
    put32(&message[0], claim_magic);
    std::memcpy(&message[fields_at], part.data(), 20);
    std::memcpy(&message[nonce_at], mine.data(), mine.size());
    put32(&message[length_at], std::uint32_t(claim.payload.size()));
    auto mac = secret.mac(claim_label, part);
    std::memcpy(&message[mac_at], mac.data(), mac.size());
    message.insert(message.end(), claim.payload.begin(), claim.payload.end());
    socket.send_all(message.data(), message.size(), deadline, what);
    Mac proof{};
    try {
        socket.recv_all(proof.data(), proof.size(), deadline, what);
    } catch (const CommError& error) {
        throw CommError(std::string(error.what()) +
                        " after this rank's claim (does every rank have the same TRELLIS_SECRET and world size?)");
    }
    if (!same_mac(proof, secret.mac(proof_label, part)))
        throw NotProven(what + ": the process there does not hold this step's secret");
}

ClaimReader::ClaimReader(const JobSecret& secret) : secret_(&secret), nonce_(fresh_nonce()) {}

std::array<std::uint8_t, ClaimReader::challenge_size> ClaimReader::challenge() const {
    std::array<std::uint8_t, challenge_size> bytes{};
    put32(bytes.data(), challenge_magic);
    std::memcpy(bytes.data() + 4, nonce_.data(), nonce_.size());
    return bytes;
}

std::size_t ClaimReader::wanted() const {
    if (bytes_.size() < claim_head) return claim_head - bytes_.size();
    return claim_head + claim_.payload.size() - bytes_.size();
}

bool ClaimReader::take(const std::uint8_t* data, std::size_t size) {
    bytes_.append(reinterpret_cast<const char*>(data), size);
    if (bytes_.size() < claim_head) return true;
    const auto* head = reinterpret_cast<const std::uint8_t*>(bytes_.data());
    if (bytes_.size() == claim_head) {  // the fixed part is whole: check it and size the payload
        if (get32(head) != claim_magic) return false;
        std::uint32_t length = get32(head + length_at);
        if (length > longest_payload) return false;
        claim_.purpose = Purpose(get32(head + fields_at));
        claim_.caller = std::int32_t(get32(head + fields_at + 4));
        claim_.callee = std::int32_t(get32(head + fields_at + 8));
        claim_.stream = std::int32_t(get32(head + fields_at + 12));
        claim_.size = std::int32_t(get32(head + fields_at + 16));
        claim_.payload.assign(length, '\0');
    }
    if (wanted() == 0) claim_.payload.assign(bytes_, claim_head);
    return true;
}

std::vector<std::uint8_t> ClaimReader::signed_by_both() const {
    Nonce caller{};
    std::memcpy(caller.data(), bytes_.data() + nonce_at, caller.size());
    return signed_part(claim_, nonce_, caller);
}

bool ClaimReader::proven() const {
    if (bytes_.size() < claim_head || wanted() != 0) return false;
    Mac mac{};
    std::memcpy(mac.data(), bytes_.data() + mac_at, mac.size());
    return same_mac(mac, secret_->mac(claim_label, signed_by_both()));
}

Mac ClaimReader::proof() const { return secret_->mac(proof_label, signed_by_both()); }

}  // namespace trellis::comm
