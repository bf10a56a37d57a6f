// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/job_secret.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <vector>

#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/host.hpp"
#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

Mac JobSecret::mac(std::string_view label, std::span<const std::uint8_t> message) const {
    if (!key_) throw CommError("no step secret to prove this rank with");
    std::vector<std::uint8_t> input(label.begin(), label.end());
    input.push_back(0);
    input.insert(input.end(), message.begin(), message.end());
    Mac out{};
    unsigned length = 0;
    if (!HMAC(EVP_sha256(), key_->data(), int(key_->size()), input.data(), input.size(), out.data(), &length) ||
        length != out.size())
        throw CommError("HMAC-SHA256 failed (libcrypto)");
    return out;
}

std::string JobSecret::name(std::string_view label, std::string_view text) const {
    auto digest = mac(label, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    return hex_text(digest.data(), 12);
}

Nonce fresh_nonce() {
    Nonce nonce{};
    if (RAND_bytes(nonce.data(), int(nonce.size())) != 1) throw CommError("no random bytes for a nonce (libcrypto)");
    return nonce;
}

bool same_mac(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

JobSecret step_secret_from_environment(const std::string& wireup, int size, const std::string& hint) {
    if (const char* value = env_value(env::secret.name)) return JobSecret(parse_step_secret(value));
    if (size <= 1) return {};
    throw Refused(wireup + " wireup: " + std::to_string(size) +
                  " ranks must prove to each other that they belong to one step, and TRELLIS_SECRET, the step's "
                  "secret, is not set (" +
                  hint + "); make one with: " + how_to_make_a_secret);
}

}  // namespace trellis::comm
