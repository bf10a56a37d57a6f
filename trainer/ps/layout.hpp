// SPDX-License-Identifier: Apache-2.0
// How the parameters are divided among K parameter servers: contiguous key ranges (whole
// parameters, in the flat buffer's order) with about the same number of bytes each, as
// ps-lite divides its key space. Servers are the last K ranks; workers are the others.
#pragma once

#include <cstddef>
#include <vector>

#include "common/error.hpp"
#include "trainer/nn/parameter_store.hpp"

namespace trellis::ps {

struct Shard {
    std::size_t first_parameter = 0, end_parameter = 0;  // indices into the learned list
    std::size_t begin = 0, end = 0;                      // offsets into the flat buffers
    std::size_t size() const { return end - begin; }
};

class Layout {
public:
    // Throws UsageError when the world cannot hold K servers and a worker.
    Layout(const nn::ParameterStore& store, int world_size, int servers);

    int servers() const { return int(shards_.size()); }
    int workers() const { return world_size_ - servers(); }
    int server_rank(int server) const { return workers() + server; }
    bool is_server(int rank) const { return rank >= workers(); }
    const Shard& shard(int server) const { return shards_.at(std::size_t(server)); }

private:
    int world_size_;
    std::vector<Shard> shards_;
};

}  // namespace trellis::ps
