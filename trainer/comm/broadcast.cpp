#include "trainer/comm/broadcast.hpp"

#include <vector>

namespace trellis::comm {

void broadcast_from_root(Transport& transport, std::span<std::byte> data) {
    if (transport.size() == 1 || data.empty()) return;
    if (transport.rank() != 0) {
        auto receive = Transfer::recv(0, data.data(), data.size_bytes());
        transport.exchange({&receive, 1});
        return;
    }
    std::vector<Transfer> sends;
    for (int r = 1; r < transport.size(); ++r) sends.push_back(Transfer::send(r, data.data(), data.size_bytes()));
    transport.exchange(sends);
}

}  // namespace trellis::comm
