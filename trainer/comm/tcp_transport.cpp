#include "trainer/comm/tcp_transport.hpp"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "common/cli.hpp"
#include "common/error.hpp"

namespace trellis::comm {

namespace {

// The first bytes on every new connection: who is calling, and for which stream (-1: control).
struct Hello {
    std::int32_t rank;
    std::int32_t stream;
};

constexpr std::uint32_t heartbeat_length = 0xffffffff;

// A large job needs (streams + 1) connections per peer, more than the usual soft limit of
// 1024 descriptors: raise it towards the hard limit, and say so when that is not enough.
void raise_open_file_limit(std::size_t needed) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, std::max<rlim_t>(needed, limit.rlim_cur));
    ::setrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_cur < needed)
        throw CommError("tcp: " + std::to_string(needed) + " open files needed, the hard limit is " +
                        std::to_string(limit.rlim_max) + " (use fewer streams per peer, or raise ulimit -n)");
}

}  // namespace

TcpTransport::TcpTransport(Wireup& wireup, TcpOptions options) : options_(std::move(options)) {
    rank_ = wireup.identity().rank;
    size_ = wireup.identity().size;
    if (options_.streams < 1) throw UsageError("TCP transport: streams per peer must be at least 1");
    raise_open_file_limit(std::size_t(size_) * std::size_t(options_.streams + 1) + 64);
    connect_mesh(wireup);
    heartbeat_ = std::thread([this] { beat(); });
}

TcpTransport::~TcpTransport() {
    {
        std::lock_guard lock(control_mutex_);
        stopping_ = true;
    }
    stop_beating_.notify_all();
    heartbeat_.join();
    // Goodbye: the peers must not take this rank's exit for a crash. Not while an exception
    // unwinds: then the exit is a failure, and the closed connections say so.
    if (failed_ || std::uncaught_exceptions() > 0) return;
    for (int r = 0; r < size_; ++r)
        if (r != rank_) send_control(r, 0);
}

void TcpTransport::beat() {
    // Four beats per timeout, so that a busy but living peer is never taken for a silent one.
    auto interval = std::clamp<Clock::duration>(options_.timeout / 4, std::chrono::milliseconds(100),
                                                std::chrono::seconds(5));
    std::unique_lock lock(control_mutex_);
    while (!stop_beating_.wait_for(lock, interval, [this] { return stopping_ || failed_; })) {
        lock.unlock();
        for (int r = 0; r < size_; ++r)
            if (r != rank_) send_control(r, heartbeat_length);
        lock.lock();
    }
}

void TcpTransport::send_control(int peer, std::uint32_t length, const std::string& notice) {
    const auto& control = peers_[std::size_t(peer)].control;
    if (!control.valid()) return;
    iovec parts[] = {{&length, sizeof length}, {const_cast<char*>(notice.data()), notice.size()}};
    std::lock_guard lock(control_mutex_);
    // Small and rare: the socket buffer takes it whole; a full buffer means the peer has not
    // read for a long time, and then a lost heartbeat changes nothing.
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = notice.empty() ? 1 : 2;
    ::sendmsg(control.fd(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool TcpTransport::silent(int peer, Clock::time_point last_progress) const {
    auto heard = std::max(last_progress, peers_[std::size_t(peer)].last_heard);
    return Clock::now() - heard > options_.timeout;
}

void TcpTransport::connect_mesh(Wireup& wireup) {
    Listener listener("0.0.0.0", 0);
    // The address the caller chose (the binding's IPoIB interface); otherwise the one the
    // wireup reached us on.
    auto address = options_.interface_address;
    if (address.empty()) address = wireup.reachable_address();
    auto endpoints = wireup.all_gather(address + "|" + std::to_string(listener.port()) + "|" + wireup.identity().host);
    peers_.resize(std::size_t(size_));
    hosts_.resize(std::size_t(size_));
    for (int r = 0; r < size_; ++r) {
        auto parts = cli::split(endpoints[std::size_t(r)], '|');
        if (parts.size() != 3) throw CommError("tcp: malformed endpoint from rank " + std::to_string(r));
        hosts_[std::size_t(r)] = parts[2];
        peers_[std::size_t(r)].streams.resize(std::size_t(options_.streams));
    }
    auto deadline = Clock::now() + options_.timeout;
    // Lower ranks accept, higher ranks connect: every pair is connected exactly once, and the
    // listen backlog holds early connections while a rank is still connecting elsewhere.
    for (int r = 0; r < rank_; ++r) {
        auto parts = cli::split(endpoints[std::size_t(r)], '|');
        for (int stream = -1; stream < options_.streams; ++stream) {
            auto socket = connect_to(parts[0], cli::parse_int<std::uint16_t>(parts[1], "a peer's port", 1), deadline);
            Hello hello{rank_, stream};
            socket.send_all(&hello, sizeof hello, deadline, "tcp: hello to rank " + std::to_string(r));
            socket.set_nonblocking();
            (stream < 0 ? peers_[std::size_t(r)].control : peers_[std::size_t(r)].streams[std::size_t(stream)]) =
                std::move(socket);
        }
    }
    int expected = (size_ - 1 - rank_) * (options_.streams + 1);
    for (int n = 0; n < expected; ++n) {
        auto socket = listener.accept(deadline, "tcp: waiting for higher ranks to connect");
        Hello hello{};
        socket.recv_all(&hello, sizeof hello, deadline, "tcp: hello");
        if (hello.rank <= rank_ || hello.rank >= size_ || hello.stream < -1 || hello.stream >= options_.streams)
            throw CommError("tcp: unexpected connection (rank " + std::to_string(hello.rank) + ", stream " +
                            std::to_string(hello.stream) + ")");
        socket.set_nonblocking();
        auto& peer = peers_[std::size_t(hello.rank)];
        (hello.stream < 0 ? peer.control : peer.streams[std::size_t(hello.stream)]) = std::move(socket);
    }
}

// One transfer's parts, one per stream it uses, and how far each has come.
struct TcpTransport::Progress {
    const Transfer* transfer;
    struct Part {
        int fd;
        char* data;
        std::size_t left;
    };
    std::vector<Part> parts;
};

void TcpTransport::announce(const std::string& notice) {
    if (failed_) return;
    {
        std::lock_guard lock(control_mutex_);
        failed_ = true;
    }
    stop_beating_.notify_all();
    for (int r = 0; r < size_; ++r)
        if (r != rank_) send_control(r, std::uint32_t(notice.size()), notice);
}

void TcpTransport::fail(const PeerFailure& failure) {
    // Tell everyone else who failed, so that they name it rather than the rank that stopped
    // because of it; the suspect too, when it is only slow.
    announce(std::to_string(failure.rank) + "|" + failure.host + "|" + failure.what());
    throw failure;
}

void TcpTransport::check_control(int peer) {
    auto& control = peers_[std::size_t(peer)].control;
    std::uint32_t length = 0;
    ssize_t n = ::recv(control.fd(), &length, sizeof length, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        if (peers_[std::size_t(peer)].finished) return;
        fail(PeerFailure(peer, host_of(peer), "exited or was killed (its connection closed)"));
    }
    if (n <= 0) return;
    // A message arrives whole or in pieces a moment apart.
    auto deadline = Clock::now() + std::chrono::seconds(5);
    auto what = "tcp: control message from rank " + std::to_string(peer);
    std::string notice;
    try {
        if (std::size_t(n) < sizeof length)
            control.recv_all(reinterpret_cast<char*>(&length) + n, sizeof length - std::size_t(n), deadline, what);
        if (length != heartbeat_length && length <= 4096) {
            notice.resize(length);
            control.recv_all(notice.data(), notice.size(), deadline, what);
        }
    } catch (const CommError& error) {
        fail(PeerFailure(peer, host_of(peer), error.what()));
    }
    peers_[std::size_t(peer)].last_heard = Clock::now();
    if (length == heartbeat_length) return;
    if (length == 0) {
        peers_[std::size_t(peer)].finished = true;
        return;
    }
    auto parts = cli::split(notice, '|');
    if (parts.size() < 3) fail(PeerFailure(peer, host_of(peer), "sent a malformed control message"));
    int culprit = std::atoi(parts[0].c_str());
    auto reason = notice.substr(parts[0].size() + parts[1].size() + 2);
    // This rank was only slow: the others have stopped, and so must it.
    if (culprit == rank_) throw CommError("rank " + std::to_string(peer) + " gave this rank up: " + reason);
    // Passed on before this rank stops: a rank that then sees this one's connection close has
    // the notice first on the same connection, and names the rank that failed.
    announce(notice);
    throw PeerFailure(culprit, parts[1], "failed (reported by rank " + std::to_string(peer) + "): " + reason);
}

void TcpTransport::check_peers() {
    for (int r = 0; r < size_; ++r)
        if (r != rank_ && !peers_[std::size_t(r)].finished) check_control(r);
}

void TcpTransport::exchange(std::span<const Transfer> transfers) {
    std::vector<Progress> work;
    for (const auto& t : transfers) {
        if (t.peer < 0 || t.peer >= size_ || t.peer == rank_)
            throw UsageError("tcp: transfer with rank " + std::to_string(t.peer) + " from rank " +
                                        std::to_string(rank_));
        Progress p{&t, {}};
        auto& streams = peers_[std::size_t(t.peer)].streams;
        int used = t.bytes >= options_.split_threshold ? int(streams.size()) : 1;
        std::size_t share = (t.bytes + std::size_t(used) - 1) / std::size_t(used), offset = 0;
        for (int s = 0; s < used && offset < t.bytes; ++s) {
            std::size_t part = std::min(share, t.bytes - offset);
            p.parts.push_back({streams[std::size_t(s)].fd(), static_cast<char*>(t.data) + offset, part});
            offset += part;
        }
        work.push_back(std::move(p));
    }

    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, std::size_t>> owner;  // (work, part) per fd; control: (npos, peer)
    std::set<std::pair<int, bool>> busy;                      // (fd, sending) taken this round
    auto last_progress = Clock::now();
    while (true) {
        fds.clear();
        owner.clear();
        // Transfers to one peer in one direction share its connections: on each connection
        // only the earliest unfinished part moves, so that messages keep their posting order.
        busy.clear();
        for (std::size_t w = 0; w < work.size(); ++w) {
            bool sending = work[w].transfer->kind == Transfer::Kind::send;
            short events = sending ? POLLOUT : POLLIN;
            for (std::size_t p = 0; p < work[w].parts.size(); ++p)
                if (work[w].parts[p].left > 0 && busy.insert({work[w].parts[p].fd, sending}).second) {
                    fds.push_back({work[w].parts[p].fd, events, 0});
                    owner.emplace_back(w, p);
                }
        }
        if (fds.empty()) return;
        // Watch every peer's control connection: a notice or a closed connection is news.
        for (int r = 0; r < size_; ++r)
            if (r != rank_ && !peers_[std::size_t(r)].finished) {
                fds.push_back({peers_[std::size_t(r)].control.fd(), POLLIN, 0});
                owner.emplace_back(std::size_t(-1), std::size_t(r));
            }
        int ready = ::poll(fds.data(), fds.size(), 1000);
        if (ready < 0 && errno != EINTR) throw CommError(std::string("tcp: poll: ") + std::strerror(errno));
        if (ready < 0) continue;
        bool progressed = false;
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (!fds[i].revents) continue;
            auto [w, p] = owner[i];
            if (w == std::size_t(-1)) {
                // Data already received counts first; the notice or close is read next round.
                if (!progressed) check_control(int(p));
                continue;
            }
            auto& part = work[w].parts[p];
            int peer = work[w].transfer->peer;
            bool sending = work[w].transfer->kind == Transfer::Kind::send;
            ssize_t n = sending ? ::send(part.fd, part.data, part.left, MSG_NOSIGNAL | MSG_DONTWAIT)
                                : ::recv(part.fd, part.data, part.left, MSG_DONTWAIT);
            if (n > 0) {
                part.data += n;
                part.left -= std::size_t(n);
                last_progress = Clock::now();
                progressed = true;
            } else if (n == 0 && !sending) {
                check_control(peer);  // a notice explains the close when there is one
                fail(PeerFailure(peer, host_of(peer), "exited or was killed (its connection closed)"));
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                check_control(peer);
                fail(PeerFailure(peer, host_of(peer), std::string("connection failed: ") + std::strerror(errno)));
            }
        }
        if (progressed) continue;
        for (auto& w : work)
            for (auto& p : w.parts)
                if (p.left > 0 && silent(w.transfer->peer, last_progress))
                    fail(PeerFailure(w.transfer->peer, host_of(w.transfer->peer),
                                     "made no progress and sent no heartbeat for " +
                                         std::to_string(options_.timeout.count()) + " s",
                                     true));
    }
}

}  // namespace trellis::comm

namespace trellis::comm {

std::optional<std::size_t> TcpTransport::first_arriving(std::span<const Transfer> receives,
                                                        std::chrono::milliseconds wait) {
    // A message starts on the peer's first stream whatever its size, so a readable first
    // stream means that peer's message is under way.
    std::vector<pollfd> fds;
    std::vector<int> control_peers;
    for (const auto& t : receives) fds.push_back({peers_.at(std::size_t(t.peer)).streams[0].fd(), POLLIN, 0});
    for (int r = 0; r < size_; ++r)
        if (r != rank_ && !peers_[std::size_t(r)].finished) {
            fds.push_back({peers_[std::size_t(r)].control.fd(), POLLIN, 0});
            control_peers.push_back(r);
        }
    int ready = ::poll(fds.data(), fds.size(), int(wait.count()));
    if (ready < 0 && errno != EINTR) throw CommError(std::string("tcp: poll: ") + std::strerror(errno));
    for (std::size_t i = 0; ready > 0 && i < receives.size(); ++i)
        if (fds[i].revents) return i;
    for (std::size_t i = receives.size(); ready > 0 && i < fds.size(); ++i)
        if (fds[i].revents) check_control(control_peers[i - receives.size()]);
    return std::nullopt;
}

std::size_t TcpTransport::exchange_first(std::span<const Transfer> receives) {
    if (receives.empty()) throw UsageError("tcp: exchange_first with nothing to receive");
    auto last_progress = Clock::now();
    while (true) {
        if (auto first = first_arriving(receives, std::chrono::milliseconds(1000))) {
            exchange(receives.subspan(*first, 1));
            return *first;
        }
        for (const auto& t : receives)
            if (silent(t.peer, last_progress))
                fail(PeerFailure(t.peer, host_of(t.peer),
                                 "sent nothing, not even a heartbeat, for " + std::to_string(options_.timeout.count()) +
                                     " s",
                                 true));
    }
}

}  // namespace trellis::comm
