// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/tcp_links.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

// The first bytes on every new connection: who calls whom, for which stream (-1: control).
struct Hello {
    std::uint32_t magic;
    std::int32_t caller;
    std::int32_t callee;
    std::int32_t stream;
};
constexpr std::uint32_t hello_magic = 0x544c4e4b;  // "TLNK"
constexpr std::uint8_t accepted = 1, refused = 0;
constexpr auto check_every = std::chrono::milliseconds(100);
constexpr auto greeting_time = std::chrono::seconds(5);

// Waits for `events` on `socket` in slices, running `check` between them, until `deadline`.
bool wait_for(const Socket& socket, short events, Clock::time_point deadline, const std::function<void()>& check) {
    while (Clock::now() < deadline) {
        pollfd p{socket.fd(), events, 0};
        int n = ::poll(&p, 1, int(check_every.count()));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) throw CommError(std::string("tcp: poll: ") + std::strerror(errno));
        check();
    }
    return false;
}

}  // namespace

TcpLinks::TcpLinks(int rank, int size, int streams)
    : rank_(rank), size_(size), streams_(streams), listener_("0.0.0.0", 0), links_(std::size_t(size)) {
    for (auto& link : links_) link.streams.resize(std::size_t(streams));
}

bool TcpLinks::ready(int peer) const {
    std::lock_guard lock(mutex_);
    return links_[std::size_t(peer)].state == State::ready;
}

void TcpLinks::make(int peer, Clock::time_point deadline, const std::function<void()>& check) {
    std::unique_lock lock(mutex_);
    auto& link = links_[std::size_t(peer)];
    while (link.state != State::ready) {
        if (link.state == State::none) {
            link.state = State::dialing;
            lock.unlock();
            bool ours = dial_control(peer, deadline, check);
            if (ours) dial_streams(peer, deadline, check);
            lock.lock();
            if (ours) link.state = State::ready;
            // Refused: the peer is dialing this rank too, and its dial wins; the watcher takes it.
            continue;
        }
        changed_.wait_for(lock, check_every);
        if (link.state == State::ready) break;
        lock.unlock();
        check();
        if (Clock::now() >= deadline)
            throw PeerFailure(peer, endpoint(peer).host, "did not complete its connection with this rank in time");
        lock.lock();
    }
}

Socket TcpLinks::dial(int peer, std::int32_t stream, Clock::time_point deadline, const std::function<void()>& check) {
    const auto& to = endpoint(peer);
    auto what = "cannot be reached at " + to.address + ":" + std::to_string(to.port);
    Socket socket;
    try {
        socket = start_connect(to.address, to.port);
    } catch (const CommError& error) {
        throw PeerFailure(peer, to.host, what + ": " + error.what());
    }
    if (!wait_for(socket, POLLOUT, deadline, check)) throw PeerFailure(peer, to.host, what + ": timed out");
    if (int error = connect_error(socket)) throw PeerFailure(peer, to.host, what + ": " + std::strerror(error));
    Hello hello{hello_magic, rank_, peer, stream};
    socket.send_all(&hello, sizeof hello, deadline, "tcp: hello to rank " + std::to_string(peer));
    return socket;
}

bool TcpLinks::dial_control(int peer, Clock::time_point deadline, const std::function<void()>& check) {
    auto socket = dial(peer, -1, deadline, check);
    std::uint8_t answer = refused;
    const auto& host = endpoint(peer).host;
    if (!wait_for(socket, POLLIN, deadline, check))
        throw PeerFailure(peer, host, "did not answer this rank's call in time");
    bool answered = ::recv(socket.fd(), &answer, 1, MSG_DONTWAIT) == 1;
    std::lock_guard lock(mutex_);
    // A peer whose own dial this rank took may have finished with the link, and ended, before
    // answering this one.
    if (!answered && links_[std::size_t(peer)].state == State::dialing)
        throw PeerFailure(peer, host, "exited or was killed (it closed the connection this rank was making)");
    if (!answered || answer != accepted) return false;
    links_[std::size_t(peer)].control = std::move(socket);
    changed_.notify_all();
    return true;
}

void TcpLinks::dial_streams(int peer, Clock::time_point deadline, const std::function<void()>& check) {
    // The peer's listener queues these whatever it is doing: none waits for an answer.
    std::vector<Socket> made;
    for (int s = 0; s < streams_; ++s) made.push_back(dial(peer, s, deadline, check));
    std::lock_guard lock(mutex_);
    links_[std::size_t(peer)].streams = std::move(made);
}

bool TcpLinks::accepts(int caller) {
    auto state = links_[std::size_t(caller)].state;
    return state == State::none || (state == State::dialing && caller < rank_);
}

std::vector<int> TcpLinks::greeting_fds() const {
    std::vector<int> fds{listener_.fd()};
    for (const auto& c : callers_) fds.push_back(c.socket.fd());
    return fds;
}

std::vector<std::pair<int, int>> TcpLinks::controls() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<int, int>> open;
    for (int peer = 0; peer < size_; ++peer)
        if (links_[std::size_t(peer)].control.valid()) open.emplace_back(peer, links_[std::size_t(peer)].control.fd());
    return open;
}

int TcpLinks::greet(int fd) {
    auto now = Clock::now();
    std::erase_if(callers_, [&](const Caller& c) { return c.until < now; });  // strays that said nothing
    if (fd == listener_.fd()) {
        for (auto socket = listener_.accept_waiting(); socket.valid(); socket = listener_.accept_waiting())
            callers_.push_back({std::move(socket), now + greeting_time});
        return -1;
    }
    auto found = std::find_if(callers_.begin(), callers_.end(), [&](const Caller& c) { return c.socket.fd() == fd; });
    if (found == callers_.end()) return -1;
    Hello hello{};
    ssize_t n = ::recv(fd, &hello, sizeof hello, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0 && std::size_t(n) < sizeof hello) return -1;  // the rest is on its way
    Socket socket = std::move(found->socket);
    callers_.erase(found);
    // Anything can connect to an open port: what is not a rank of this job calling this rank
    // is closed, not fatal.
    if (n != sizeof hello || ::recv(fd, &hello, sizeof hello, MSG_DONTWAIT) != sizeof hello ||
        hello.magic != hello_magic || hello.callee != rank_ || hello.caller < 0 || hello.caller >= size_ ||
        hello.caller == rank_ || hello.stream < -1 || hello.stream >= streams_)
        return -1;
    std::lock_guard lock(mutex_);
    auto& link = links_[std::size_t(hello.caller)];
    if (hello.stream >= 0) {
        // A data connection of a link the caller's dial made.
        if (link.state != State::linked || link.streams[std::size_t(hello.stream)].valid()) return -1;
        link.streams[std::size_t(hello.stream)] = std::move(socket);
        if (++link.attached == streams_) {
            link.state = State::ready;
            changed_.notify_all();
        }
        return -1;
    }
    bool accept = accepts(hello.caller);
    std::uint8_t answer = accept ? accepted : refused;
    if (::send(fd, &answer, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 || !accept) return -1;
    link.state = State::linked;
    link.control = std::move(socket);
    changed_.notify_all();
    return hello.caller;
}

}  // namespace trellis::comm
