#include "trainer/comm/rendezvous.hpp"

#include <cstdio>
#include <cstring>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

// What a rank says first when it joins.
struct JoinRequest {
    std::uint32_t magic;
    std::int32_t rank;
    std::int32_t size;
};
constexpr std::uint32_t join_magic = 0x544c5253;  // "TRLS"

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
        for (int joined = 1; joined < identity_.size;) {
            auto socket = listener.accept(until, name_ + " rendezvous on port " + std::to_string(port) + " (" +
                                                     std::to_string(joined - 1) + " of " +
                                                     std::to_string(identity_.size - 1) + " ranks joined)");
            // Anything can connect to an open port: a caller that does not greet like a rank
            // of this job (another job on a reused port, a scanner) is dropped, not fatal.
            JoinRequest request{};
            try {
                socket.recv_all(&request, sizeof request, std::min(until, Clock::now() + std::chrono::seconds(5)),
                                "rendezvous");
            } catch (const CommError&) {
                continue;
            }
            if (request.magic != join_magic || request.size != identity_.size) {
                std::fprintf(stderr, "trellis: %s rendezvous: ignored a connection that is not a rank of this job\n",
                             name_.c_str());
                continue;
            }
            if (request.rank <= 0 || request.rank >= identity_.size || workers_[std::size_t(request.rank)].valid())
                throw CommError(name_ + " rendezvous: two processes claim rank " + std::to_string(request.rank) +
                                " (world of " + std::to_string(identity_.size) + ")");
            workers_[std::size_t(request.rank)] = std::move(socket);
            ++joined;
        }
    } else {
        master_ = connect_to(master_host_, port, until);
        JoinRequest request{join_magic, identity_.rank, identity_.size};
        master_.send_all(&request, sizeof request, until, "rendezvous with rank 0 at " + master_host_);
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
