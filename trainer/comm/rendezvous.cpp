#include "trainer/comm/rendezvous.hpp"

#include <cstring>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

void send_blob(const Socket& socket, const std::string& blob, Clock::time_point deadline, const std::string& what) {
    std::uint32_t length = std::uint32_t(blob.size());
    socket.send_all(&length, sizeof length, deadline, what);
    socket.send_all(blob.data(), blob.size(), deadline, what);
}

std::string recv_blob(const Socket& socket, Clock::time_point deadline, const std::string& what) {
    std::uint32_t length = 0;
    socket.recv_all(&length, sizeof length, deadline, what);
    if (length > (64u << 20)) throw CommError(what + ": announced a blob of " + std::to_string(length) + " bytes");
    std::string blob(length, '\0');
    socket.recv_all(blob.data(), length, deadline, what);
    return blob;
}

}  // namespace

RendezvousWireup::RendezvousWireup(std::string name, Identity identity, std::string master_host, std::uint16_t port,
                                   std::chrono::seconds timeout)
    : name_(std::move(name)), master_host_(std::move(master_host)), timeout_(timeout) {
    identity_ = std::move(identity);
    if (identity_.size < 1 || identity_.rank < 0 || identity_.rank >= identity_.size)
        throw CommError(name_ + " wireup: rank " + std::to_string(identity_.rank) + " outside a world of " +
                        std::to_string(identity_.size));
    auto until = deadline();
    if (identity_.rank == 0) {
        address_ = resolve_ipv4(master_host_);
        if (identity_.size == 1) return;
        Listener listener("0.0.0.0", port);
        workers_.resize(std::size_t(identity_.size));
        for (int joined = 1; joined < identity_.size; ++joined) {
            auto socket = listener.accept(until, name_ + " rendezvous on port " + std::to_string(port) + " (" +
                                                     std::to_string(joined - 1) + " of " +
                                                     std::to_string(identity_.size - 1) + " ranks joined)");
            std::int32_t rank = -1;
            socket.recv_all(&rank, sizeof rank, until, "rendezvous");
            if (rank <= 0 || rank >= identity_.size || workers_[std::size_t(rank)].valid())
                throw CommError(name_ + " rendezvous: a peer announced rank " + std::to_string(rank) +
                                " (world of " + std::to_string(identity_.size) + ")");
            workers_[std::size_t(rank)] = std::move(socket);
        }
    } else {
        master_ = connect_to(master_host_, port, until);
        std::int32_t rank = identity_.rank;
        master_.send_all(&rank, sizeof rank, until, "rendezvous with rank 0 at " + master_host_);
        address_ = master_.local_address();
    }
}

std::vector<std::string> RendezvousWireup::all_gather(const std::string& mine) {
    auto until = deadline();
    std::vector<std::string> all(std::size_t(identity_.size));
    if (identity_.rank == 0) {
        all[0] = mine;
        for (int r = 1; r < identity_.size; ++r)
            all[std::size_t(r)] = recv_blob(workers_[std::size_t(r)], until, "rendezvous: rank " + std::to_string(r));
        for (int r = 1; r < identity_.size; ++r)
            for (const auto& blob : all) send_blob(workers_[std::size_t(r)], blob, until, "rendezvous: rank " + std::to_string(r));
        return all;
    }
    std::string what = "rendezvous: rank 0 (" + master_host_ + ")";
    send_blob(master_, mine, until, what);
    for (auto& blob : all) blob = recv_blob(master_, until, what);
    return all;
}

}  // namespace trellis::comm
