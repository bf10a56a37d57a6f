// SPDX-License-Identifier: Apache-2.0
// The TCP transport's watcher thread: it greets the peers that call, beats on every link, reads
// every control connection, and passes on what it learns of a failure (tcp_transport.hpp).
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trainer/comm/failure_notice.hpp"
#include "trainer/comm/tcp_transport.hpp"

namespace trellis::comm {

namespace {

constexpr std::uint32_t heartbeat_length = 0xffffffff;
constexpr std::uint32_t longest_notice = 4096;

int milliseconds_until(Clock::time_point when) {
    // Rounded up: a poll that wakes a moment early would spin until the time came.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now()).count();
    return int(std::clamp<long long>(left, 0, 60'000));
}

}  // namespace

void TcpTransport::watch() {
    // Four beats per timeout, so that a busy but living peer is never taken for a silent one.
    const auto interval =
        std::clamp<Clock::duration>(options_.timeout / 4, std::chrono::milliseconds(100), std::chrono::seconds(5));
    auto next_beat = Clock::now();
    std::vector<pollfd> fds;
    std::vector<int> peer_of;  // per fd: the peer of a control connection; -1 a caller, -2 the wake-up
    while (!stopping_) {
        try {
            fds.assign(1, {wake_fd_, POLLIN, 0});
            peer_of.assign(1, -2);
            for (int fd : links_.greeting_fds()) {
                fds.push_back({fd, POLLIN, 0});
                peer_of.push_back(-1);
            }
            for (auto [peer, fd] : links_.controls())
                if (!peers_[std::size_t(peer)].closed) {
                    fds.push_back({fd, POLLIN, 0});
                    peer_of.push_back(peer);
                }
            int ready =
                ::poll(fds.data(), fds.size(), milliseconds_until(std::min(next_beat, links_.next_greeting_event())));
            if (ready < 0 && errno != EINTR) throw CommError(std::string("tcp: poll: ") + std::strerror(errno));
            links_.greet(-1);  // callers whose time is up go
            for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
                if (!fds[i].revents) continue;
                if (peer_of[i] == -2) {
                    std::uint64_t count;
                    (void)!::read(wake_fd_, &count, sizeof count);
                } else if (peer_of[i] == -1) {
                    if (int peer = links_.greet(fds[i].fd); peer >= 0) {
                        peers_[std::size_t(peer)].last_heard = Clock::now().time_since_epoch().count();
                        welcome(peer);
                    }
                } else {
                    read_control(peer_of[i], fds[i].fd);
                }
            }
            if (Clock::now() >= next_beat) {
                beat_and_look_for_silence();
                next_beat = Clock::now() + interval;
            }
        } catch (const PeerFailure& failure) {
            report(failure);
        } catch (const std::exception& error) {
            // This rank can no longer greet or beat (no descriptors left, say): it is the one
            // that fails, and says so to the others.
            report(PeerFailure(rank_, host_of(rank_), std::string("can no longer watch its links: ") + error.what()));
            return;
        }
    }
}

void TcpTransport::beat_and_look_for_silence() {
    for (auto [peer, fd] : links_.controls()) {
        auto& p = peers_[std::size_t(peer)];
        if (p.closed || p.finished) continue;
        if (!announced_) send_control(fd, heartbeat_length);
        if (!failed_ && silent(peer, Clock::time_point()))
            throw PeerFailure(
                peer, host_of(peer),
                "made no progress and sent no heartbeat for " + std::to_string(options_.timeout.count()) + " s", true);
    }
}

void TcpTransport::send_control(int fd, std::uint32_t length, const std::string& notice) {
    iovec parts[] = {{&length, sizeof length}, {const_cast<char*>(notice.data()), notice.size()}};
    std::lock_guard lock(control_mutex_);
    // Small and rare: the socket buffer takes it whole; a full buffer means the peer has not
    // read for a long time, and then a lost heartbeat changes nothing.
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = notice.empty() ? 1 : 2;
    ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void TcpTransport::record(std::exception_ptr failure) {
    std::lock_guard lock(failure_mutex_);
    if (failure_) return;
    failure_ = std::move(failure);
    failed_ = true;
    std::uint64_t one = 1;
    (void)!::write(news_fd_, &one, sizeof one);
}

void TcpTransport::report(const PeerFailure& failure) {
    record(std::make_exception_ptr(failure));
    // Tell every linked rank who failed, so that they name it rather than the rank that stopped
    // because of it; the suspect too, when it is only slow.
    announce(notice_text({failure.rank, failure.host, failure.what()}));
}

void TcpTransport::announce(const std::string& notice) {
    {
        std::lock_guard lock(control_mutex_);
        if (announced_) return;
        notice_ = notice;
        announced_ = true;
    }
    for (auto [peer, fd] : links_.controls())
        if (!peers_[std::size_t(peer)].closed) send_control(fd, std::uint32_t(notice.size()), notice);
}

void TcpTransport::welcome(int peer) {
    // A link made after the news went out gets it too, so that its peer names the right rank.
    std::string notice;
    {
        std::lock_guard lock(control_mutex_);
        notice = notice_;
    }
    if (!notice.empty()) send_control(links_.control(peer).fd(), std::uint32_t(notice.size()), notice);
}

void TcpTransport::read_control(int peer, int fd) {
    auto& from = peers_[std::size_t(peer)];
    std::uint32_t length = 0;
    ssize_t n = ::recv(fd, &length, sizeof length, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        from.closed = true;
        if (from.finished) return;
        throw PeerFailure(peer, host_of(peer), "exited or was killed (its connection closed)");
    }
    if (n <= 0) return;
    // A message arrives whole or in pieces a moment apart.
    auto deadline = Clock::now() + std::chrono::seconds(5);
    auto what = "tcp: control message from rank " + std::to_string(peer);
    std::string notice;
    try {
        const auto& control = links_.control(peer);
        if (std::size_t(n) < sizeof length)
            control.recv_all(reinterpret_cast<char*>(&length) + n, sizeof length - std::size_t(n), deadline, what);
        if (length != heartbeat_length && length <= longest_notice) {
            notice.resize(length);
            control.recv_all(notice.data(), notice.size(), deadline, what);
        }
    } catch (const CommError& error) {
        throw PeerFailure(peer, host_of(peer), error.what());
    }
    from.last_heard = Clock::now().time_since_epoch().count();
    if (length == heartbeat_length) return;
    if (length == 0) {
        from.finished = true;
        return;
    }
    auto parsed = parse_notice(notice, size_);
    if (!parsed) throw PeerFailure(peer, host_of(peer), "sent a malformed control message");
    int culprit = parsed->culprit;
    const auto& reason = parsed->reason;
    if (culprit == rank_) {
        // This rank was only slow: the others have stopped, and so must it.
        announced_ = true;
        record(std::make_exception_ptr(CommError("rank " + std::to_string(peer) + " gave this rank up: " + reason)));
        return;
    }
    // Passed on before this rank stops: a rank that then sees this one's connection close has
    // the notice first on the same connection, and names the rank that failed.
    record(std::make_exception_ptr(
        PeerFailure(culprit, parsed->host, "failed (reported by rank " + std::to_string(peer) + "): " + reason)));
    announce(notice_text(*parsed));
}

}  // namespace trellis::comm
