// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/gate.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace trellis::comm {

namespace {

// How long accepting stops when the process has no descriptor left: the callers waiting are
// dropped meanwhile, which gives descriptors back.
constexpr auto descriptor_pause = std::chrono::milliseconds(200);
constexpr auto log_every = std::chrono::seconds(5);

std::string address_of(const sockaddr_in& from) {
    char text[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(from.sin_port));
}

}  // namespace

Gate::Gate(const std::string& address, std::uint16_t port, const JobSecret& secret, Expected expected,
           std::string owner, Clock::time_point wait_until)
    : secret_(secret), expected_(expected), owner_(std::move(owner)), listener_(address, port, wait_until) {
    if (secret_.empty() && expected_.size > 1)
        throw CommError(owner_ + ": no step secret: the ranks could not prove themselves");
    listener_.set_nonblocking();  // a caller that gave up between poll and accept must not block us
}

bool Gate::room() const {
    return Clock::now() >= paused_until_ &&
           (callers_.size() < most_waiting || Clock::now() - callers_.front().since >= room_after);
}

std::vector<int> Gate::fds() const {
    std::vector<int> fds;
    if (room()) fds.push_back(listener_.fd());
    for (const auto& caller : callers_) fds.push_back(caller.socket.fd());
    return fds;
}

Clock::time_point Gate::next_event() const {
    auto next = Clock::time_point::max();
    if (paused_until_ > Clock::now()) next = paused_until_;
    if (callers_.size() >= most_waiting) next = std::min(next, callers_.front().since + room_after);
    for (const auto& caller : callers_) next = std::min(next, caller.until);
    return next;
}

void Gate::accept_waiting() {
    while (room()) {
        sockaddr_in from{};
        socklen_t length = sizeof from;
        int fd = ::accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&from), &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            // Out of descriptors or memory, or a refusal from the network stack: a flood of
            // connections must not stop the rank. The oldest caller goes, and accepting waits.
            log_dropped("the listener", std::string("accept: ") + std::strerror(errno));
            paused_until_ = Clock::now() + descriptor_pause;
            if (!callers_.empty()) callers_.erase(callers_.begin());
            return;
        }
        Socket socket(fd);
        if (callers_.size() >= most_waiting) {
            log_dropped(callers_.front().from, "it made no claim before others needed its place");
            callers_.erase(callers_.begin());
        }
        auto now = Clock::now();
        Caller caller{std::move(socket), now, now + claim_time, ClaimReader(secret_), address_of(from)};
        auto challenge = caller.reader.challenge();
        // A fresh connection's buffer takes these few bytes whole.
        if (::send(caller.socket.fd(), challenge.data(), challenge.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
            ssize_t(challenge.size()))
            callers_.push_back(std::move(caller));
    }
}

void Gate::expire() {
    auto now = Clock::now();
    for (auto it = callers_.begin(); it != callers_.end();) {
        if (it->until > now) {
            ++it;
            continue;
        }
        log_dropped(it->from, "it made no claim within " + std::to_string(claim_time.count()) + " s");
        it = callers_.erase(it);
    }
}

std::string Gate::check(const Claim& claim) const {
    if (claim.purpose != expected_.purpose) return "it called for another purpose";
    if (claim.size != expected_.size) return "it claimed a world of " + std::to_string(claim.size);
    if (claim.callee != expected_.rank) return "it called rank " + std::to_string(claim.callee);
    if (claim.caller < 0 || claim.caller >= expected_.size || claim.caller == expected_.rank)
        return "it claimed to be rank " + std::to_string(claim.caller);
    if (expected_.caller >= 0 && claim.caller != expected_.caller)
        return "rank " + std::to_string(claim.caller) + " called where rank " + std::to_string(expected_.caller) +
               " was awaited";
    if (claim.stream < -1 || claim.stream >= expected_.streams) return "it asked for an unknown stream";
    return {};
}

std::optional<Admitted> Gate::serve(int fd) {
    expire();
    if (fd < 0) return std::nullopt;
    if (fd == listener_.fd()) {
        accept_waiting();  // as far as there is room, and not while paused
        return std::nullopt;
    }
    auto found = std::find_if(callers_.begin(), callers_.end(), [&](const Caller& c) { return c.socket.fd() == fd; });
    if (found == callers_.end()) return std::nullopt;
    std::uint8_t buffer[longest_payload + 128];
    ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, found->reader.wanted()), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return std::nullopt;
    std::string why;
    if (n <= 0)
        why = "it closed the connection";
    else if (!found->reader.take(buffer, std::size_t(n)))
        why = "it does not speak trellis's handshake";
    else if (found->reader.wanted() > 0)
        return std::nullopt;  // the rest is on its way
    else if (!found->reader.proven())
        why = "it does not hold this step's secret";
    else
        why = check(found->reader.claim());
    if (!why.empty()) {
        log_dropped(found->from, why);
        callers_.erase(found);
        return std::nullopt;
    }
    auto proof = found->reader.proof();
    Admitted admitted{std::move(found->socket), found->reader.claim()};
    callers_.erase(found);
    admitted.socket.tune_for_bulk();  // only now: a stranger's connection costs no large buffers
    if (::send(admitted.socket.fd(), proof.data(), proof.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(proof.size()))
        return std::nullopt;
    return admitted;
}

Admitted Gate::admit(Clock::time_point deadline, const std::string& waiting_for) {
    std::vector<pollfd> polled;
    while (true) {
        polled.clear();
        for (int fd : fds()) polled.push_back({fd, POLLIN, 0});
        auto wake = std::min(deadline, next_event());
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
        int ready = ::poll(polled.data(), polled.size(), int(std::clamp<long long>(left + 1, 0, 60'000)));
        if (ready < 0 && errno != EINTR) throw CommError(waiting_for + ": poll: " + std::strerror(errno));
        for (const auto& p : polled)
            if (p.revents)
                if (auto admitted = serve(p.fd)) return std::move(*admitted);
        serve(-1);
        if (Clock::now() >= deadline) throw CommError(waiting_for + ": timed out");
    }
}

void Gate::log_dropped(const std::string& from, const std::string& why) {
    ++unlogged_;
    auto now = Clock::now();
    if (logged_at_ != Clock::time_point{} && now - logged_at_ < log_every) return;
    std::fprintf(stderr, "trellis: %s: dropped %d connection%s not wanted here (the last from %s: %s)\n",
                 owner_.c_str(), unlogged_, unlogged_ == 1 ? "" : "s", from.c_str(), why.c_str());
    unlogged_ = 0;
    logged_at_ = now;
}

}  // namespace trellis::comm
