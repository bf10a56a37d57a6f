// Broadcast from rank 0 (the initial weights and statistics, so that every rank starts from
// the same model whatever its seed).
#pragma once

#include <span>

#include "trainer/comm/transport.hpp"

namespace trellis::comm {

void broadcast_from_root(Transport& transport, std::span<float> data);

}  // namespace trellis::comm
