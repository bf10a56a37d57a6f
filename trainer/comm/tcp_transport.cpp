// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/tcp_transport.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "trainer/comm/watch_graph.hpp"

namespace trellis::comm {

namespace {

// A rank links to few peers, but a parameter server links to every worker: raise the soft
// limit of open files towards the hard one as far as a link to every peer would need.
void raise_open_file_limit(std::size_t needed) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, needed);
    ::setrlimit(RLIMIT_NOFILE, &limit);
}

int make_eventfd() {
    int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) throw CommError(std::string("tcp: eventfd: ") + std::strerror(errno));
    return fd;
}

// How long a rank whose data connection closed waits for its watcher to read the peer's
// control connection: a failure notice there names the rank that really failed.
constexpr auto control_grace = std::chrono::seconds(2);

}  // namespace

namespace {

// The address the caller chose (the binding's IPoIB interface); otherwise the one the wireup
// reached us on. The links listen on it alone.
std::string advertised_address(const TcpOptions& options, const Wireup& wireup) {
    return options.interface_address.empty() ? wireup.reachable_address() : options.interface_address;
}

}  // namespace

TcpTransport::TcpTransport(Wireup& wireup, TcpOptions options)
    : options_(std::move(options)),
      links_(wireup.identity().rank, wireup.identity().size, std::max(options_.streams, 1),
             advertised_address(options_, wireup), wireup.secret()),
      peers_(std::size_t(wireup.identity().size)) {
    rank_ = wireup.identity().rank;
    size_ = wireup.identity().size;
    if (options_.streams < 1) throw UsageError("TCP transport: streams per peer must be at least 1");
    raise_open_file_limit(std::size_t(size_) * std::size_t(options_.streams + 1) + Gate::most_waiting + 64);
    auto address = advertised_address(options_, wireup);
    auto said = wireup.all_gather(address + "|" + std::to_string(links_.port()) + "|" + wireup.identity().host);
    std::vector<Endpoint> endpoints;
    for (int r = 0; r < size_; ++r) {
        auto parts = cli::split(said[std::size_t(r)], '|');
        if (parts.size() != 3) throw CommError("tcp: malformed endpoint from rank " + std::to_string(r));
        endpoints.push_back({parts[0], cli::parse_int<std::uint16_t>(parts[1], "a peer's port", 1), parts[2]});
        hosts_.push_back(parts[2]);
    }
    links_.set_endpoints(std::move(endpoints));
    news_fd_ = make_eventfd();
    wake_fd_ = make_eventfd();
    watcher_ = std::thread([this] { watch(); });
    try {
        for (int peer : watch_peers(rank_, size_)) link(peer);
    } catch (...) {
        stop_watching();
        throw;
    }
}

void TcpTransport::stop_watching() {
    stopping_ = true;
    std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    if (watcher_.joinable()) watcher_.join();
    ::close(news_fd_);
    ::close(wake_fd_);
}

TcpTransport::~TcpTransport() {
    stop_watching();
    // Goodbye: the peers must not take this rank's exit for a crash. Not while an exception
    // unwinds, nor after a failure: then the exit is one, and the closed connections say so.
    if (thrown_ || announced_ || std::uncaught_exceptions() > 0) return;
    for (auto [peer, fd] : links_.controls())
        if (!peers_[std::size_t(peer)].closed) send_control(fd, 0);
}

void TcpTransport::link(int peer) {
    if (links_.ready(peer)) return;
    // The watcher may see the control connection before the streams are made: its silence
    // counts from now, not from the transport's start.
    auto& heard = peers_[std::size_t(peer)].last_heard;
    heard = Clock::now().time_since_epoch().count();
    try {
        links_.make(peer, Clock::now() + options_.timeout, [this] { check_peers(); });
    } catch (const PeerFailure& failure) {
        fail(failure);  // or what the watcher heard first
    } catch (const CommError& error) {
        fail(PeerFailure(peer, host_of(peer), error.what()));
    }
    heard = Clock::now().time_since_epoch().count();
    welcome(peer);
    // Its control connection is new: the watcher reads it from now on.
    std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
}

void TcpTransport::check_peers() {
    if (!failed_) return;
    std::lock_guard lock(failure_mutex_);
    thrown_ = true;
    std::rethrow_exception(failure_);
}

void TcpTransport::fail(const PeerFailure& failure) {
    check_peers();  // what the watcher heard first explains this one
    report(failure);
    check_peers();
    throw failure;  // not reached: check_peers throws what was recorded
}

bool TcpTransport::silent(int peer, Clock::time_point last_progress) const {
    auto heard =
        std::max(last_progress, Clock::time_point(Clock::duration(peers_[std::size_t(peer)].last_heard.load())));
    return Clock::now() - heard > options_.timeout;
}

void TcpTransport::peer_ended(int peer, const std::string& how) {
    auto until = Clock::now() + control_grace;
    while (!failed_ && !peers_[std::size_t(peer)].closed && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    fail(PeerFailure(peer, host_of(peer), how));
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

void TcpTransport::exchange(std::span<const Transfer> transfers) {
    std::vector<Progress> work;
    for (const auto& t : transfers) {
        if (t.peer < 0 || t.peer >= size_ || t.peer == rank_)
            throw UsageError("tcp: transfer with rank " + std::to_string(t.peer) + " from rank " +
                             std::to_string(rank_));
        link(t.peer);
        Progress p{&t, {}};
        int used = t.bytes >= options_.split_threshold ? links_.streams() : 1;
        std::size_t share = (t.bytes + std::size_t(used) - 1) / std::size_t(used), offset = 0;
        for (int s = 0; s < used && offset < t.bytes; ++s) {
            std::size_t part = std::min(share, t.bytes - offset);
            p.parts.push_back({links_.stream(t.peer, s).fd(), static_cast<char*>(t.data) + offset, part});
            offset += part;
        }
        work.push_back(std::move(p));
    }

    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, std::size_t>> owner;  // (work, part) per fd
    std::set<std::pair<int, bool>> busy;                     // (fd, sending) taken this round
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
        // The watcher's news: a failure anywhere in the job.
        fds.push_back({news_fd_, POLLIN, 0});
        int ready = ::poll(fds.data(), fds.size(), 1000);
        if (ready < 0 && errno != EINTR) throw CommError(std::string("tcp: poll: ") + std::strerror(errno));
        if (ready < 0) continue;
        // Data already received counts first; the news is read next round.
        bool progressed = false;
        for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
            if (!fds[i].revents) continue;
            auto [w, p] = owner[i];
            auto& part = work[w].parts[p];
            int peer = work[w].transfer->peer;
            bool sending = work[w].transfer->kind == Transfer::Kind::send;
            ssize_t n = sending ? ::send(part.fd, part.data, part.left, MSG_NOSIGNAL | MSG_DONTWAIT)
                                : ::recv(part.fd, part.data, part.left, MSG_DONTWAIT);
            if (n > 0) {
                part.data += n;
                part.left -= std::size_t(n);
                progressed = true;
            } else if (n == 0 && !sending) {
                peer_ended(peer, "exited or was killed (its connection closed)");
            } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                peer_ended(peer, std::string("connection failed: ") + std::strerror(errno));
            }
        }
        if (!progressed) check_peers();
    }
}

std::optional<std::size_t> TcpTransport::first_arriving(std::span<const Transfer> receives,
                                                        std::chrono::milliseconds wait) {
    // A message starts on the peer's first stream whatever its size, so a readable first
    // stream means that peer's message is under way.
    for (const auto& t : receives) link(t.peer);
    std::vector<pollfd> fds;
    for (const auto& t : receives) fds.push_back({links_.stream(t.peer, 0).fd(), POLLIN, 0});
    fds.push_back({news_fd_, POLLIN, 0});
    int ready = ::poll(fds.data(), fds.size(), int(wait.count()));
    if (ready < 0 && errno != EINTR) throw CommError(std::string("tcp: poll: ") + std::strerror(errno));
    for (std::size_t i = 0; ready > 0 && i < receives.size(); ++i)
        if (fds[i].revents) return i;
    check_peers();
    return std::nullopt;
}

std::size_t TcpTransport::exchange_first(std::span<const Transfer> receives) {
    if (receives.empty()) throw UsageError("tcp: exchange_first with nothing to receive");
    while (true) {
        // A silent sender is found by the watcher, which wakes this wait.
        if (auto first = first_arriving(receives, std::chrono::milliseconds(1000))) {
            exchange(receives.subspan(*first, 1));
            return *first;
        }
    }
}

}  // namespace trellis::comm
