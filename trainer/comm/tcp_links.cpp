// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/tcp_links.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

constexpr std::uint8_t accepted = 1, refused = 0;
constexpr auto check_every = std::chrono::milliseconds(100);
constexpr auto redial_pause = std::chrono::milliseconds(50);

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

TcpLinks::TcpLinks(int rank, int size, int streams, const std::string& address, const JobSecret& secret)
    : rank_(rank),
      size_(size),
      streams_(streams),
      secret_(secret),
      gate_(address, 0, secret, Expected{Purpose::link, rank, size, streams}, "tcp, rank " + std::to_string(rank)),
      links_(std::size_t(size)) {
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
    auto whom = "tcp: rank " + std::to_string(peer) + " at " + to.address + ":" + std::to_string(to.port);
    // A connection that fails its handshake (the peer's gate was full, or a process that is
    // not the peer answered) is made again: only the deadline ends the attempts.
    for (bool said = false;; said = true) {
        Socket socket;
        try {
            socket = start_connect(to.address, to.port);
        } catch (const CommError& error) {
            throw PeerFailure(peer, to.host, what + ": " + error.what());
        }
        if (!wait_for(socket, POLLOUT, deadline, check)) throw PeerFailure(peer, to.host, what + ": timed out");
        if (int error = connect_error(socket)) throw PeerFailure(peer, to.host, what + ": " + std::strerror(error));
        try {
            // A peer's gate may keep this caller in its queue while it serves others.
            if (!wait_for(socket, POLLIN, deadline, check)) throw CommError(whom + ": no challenge in time");
            prove_claim(socket, secret_, Claim{Purpose::link, rank_, peer, stream, size_, {}}, deadline, whom);
            return socket;
        } catch (const CommError& error) {
            // The peer's own dial made the link meanwhile, and the peer may be gone already.
            if (stream < 0 && !still_dialing(peer)) return Socket();
            if (Clock::now() >= deadline) throw PeerFailure(peer, to.host, error.what());
            if (!said) std::fprintf(stderr, "trellis: %s; trying again\n", error.what());
        }
        check();
        std::this_thread::sleep_for(redial_pause);
    }
}

bool TcpLinks::still_dialing(int peer) const {
    std::lock_guard lock(mutex_);
    return links_[std::size_t(peer)].state == State::dialing;
}

bool TcpLinks::dial_control(int peer, Clock::time_point deadline, const std::function<void()>& check) {
    auto socket = dial(peer, -1, deadline, check);
    if (!socket.valid()) return false;
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
    // The peer's watcher answers these whatever its own thread is doing.
    std::vector<Socket> made;
    for (int s = 0; s < streams_; ++s) made.push_back(dial(peer, s, deadline, check));
    std::lock_guard lock(mutex_);
    links_[std::size_t(peer)].streams = std::move(made);
}

bool TcpLinks::accepts(int caller) {
    auto state = links_[std::size_t(caller)].state;
    return state == State::none || (state == State::dialing && caller < rank_);
}

std::vector<std::pair<int, int>> TcpLinks::controls() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<int, int>> open;
    for (int peer = 0; peer < size_; ++peer)
        if (links_[std::size_t(peer)].control.valid()) open.emplace_back(peer, links_[std::size_t(peer)].control.fd());
    return open;
}

int TcpLinks::greet(int fd) {
    auto admitted = gate_.serve(fd);
    if (!admitted) return -1;
    const auto& hello = admitted->claim;
    auto& socket = admitted->socket;
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
