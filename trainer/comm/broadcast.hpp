// SPDX-License-Identifier: Apache-2.0
// Broadcast from rank 0 (the initial weights and statistics, so that every rank starts from
// the same model whatever its seed; the step to start from; NCCL's unique id).
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>

#include "trainer/comm/transport.hpp"

namespace trellis::comm {

void broadcast_from_root(Transport& transport, std::span<std::byte> data);

inline void broadcast_from_root(Transport& transport, std::span<float> data) {
    broadcast_from_root(transport, std::as_writable_bytes(data));
}

// One value of a plain type, such as a 64-bit step.
template <typename Value>
requires std::is_trivially_copyable_v<Value>
void broadcast_value_from_root(Transport& transport, Value& value) {
    broadcast_from_root(transport, std::as_writable_bytes(std::span<Value, 1>(&value, 1)));
}

}  // namespace trellis::comm
