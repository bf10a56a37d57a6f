// SPDX-License-Identifier: Apache-2.0
// The step's secret as the ranks use it: the key of the HMAC-SHA256 (libcrypto) with which
// every connection between ranks proves both of its ends (handshake.hpp), and of the names of
// the step's shared-memory segments. It protects the job from other users of the nodes and
// of the network: they can connect to a rank's ports but cannot take a rank's place, feed it
// data or stop it. It does not protect from root, from anyone who can read a rank's environment,
// or from whoever can read or change the network's packets (data is not encrypted).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/step_secret.hpp"

namespace trellis::comm {

using Mac = std::array<std::uint8_t, 32>;
using Nonce = std::array<std::uint8_t, 16>;

class JobSecret {
public:
    JobSecret() = default;  // none: a job of one rank, which meets nobody
    explicit JobSecret(const SecretBytes& key) : key_(key) {}

    bool empty() const { return !key_; }
    // HMAC-SHA256 over `label` and `message`: a label per use, so that what proves one thing
    // never proves another.
    Mac mac(std::string_view label, std::span<const std::uint8_t> message) const;
    // A name for a shared resource that only holders of the secret can tell in advance: 24 hex
    // digits of the HMAC of `text`.
    std::string name(std::string_view label, std::string_view text) const;

private:
    std::optional<SecretBytes> key_;
};

// A nonce nobody can predict (libcrypto's RAND_bytes).
Nonce fresh_nonce();

// Equal in time that does not depend on where they differ.
bool same_mac(const Mac& a, const Mac& b);

// The secret of this process's step for a wireup (`wireup` names it in messages) of `size`
// ranks: TRELLIS_SECRET when set; none for a single rank; otherwise Refused, saying how to make
// one (`hint`: where it should have come from).
JobSecret step_secret_from_environment(const std::string& wireup, int size, const std::string& hint);

}  // namespace trellis::comm
