#include "trainer/comm/barrier.hpp"

namespace trellis::comm {

void barrier(Transport& transport) {
    const int n = transport.size(), rank = transport.rank();
    for (int distance = 1; distance < n; distance <<= 1) {
        char signal = 1, heard = 0;
        Transfer transfers[] = {Transfer::send((rank + distance) % n, &signal, 1),
                                Transfer::recv((rank - distance % n + n) % n, &heard, 1)};
        transport.exchange(transfers);
    }
}

}  // namespace trellis::comm
