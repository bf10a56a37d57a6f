// SPDX-License-Identifier: Apache-2.0
// A step's secret: 32 random bytes that every rank of the step holds and no other user can
// read, so that ranks prove to each other that they belong to the step (trainer/comm/
// job_secret.hpp). srun's plugin or trellis-agent launch makes one and hands it to the tasks in
// TRELLIS_SECRET as 64 hex digits; a user of the plain-environment wireup gives one there, or
// the path of a file that holds it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace trellis {

inline constexpr std::size_t secret_size = 32;
using SecretBytes = std::array<std::uint8_t, secret_size>;

// Bytes as lower-case hex digits.
std::string hex_text(const std::uint8_t* bytes, std::size_t size);

// A new secret as 64 hex digits, from the kernel's random source (getrandom(2)).
std::string make_step_secret();

// The bytes of TRELLIS_SECRET's value: 64 hex digits, or an absolute path of a file that holds
// them (a final newline allowed) and that no other user may read. Throws UsageError naming what
// was wrong and what is accepted; the message never repeats the value.
SecretBytes parse_step_secret(const std::string& value);

// How a user makes one, for refusals.
inline constexpr const char* how_to_make_a_secret =
    "export TRELLIS_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n') before starting the ranks, "
    "in a way that gives every rank the same value";

}  // namespace trellis
