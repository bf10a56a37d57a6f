// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

int milliseconds_until(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left < 0 ? 0 : int(std::min<long long>(left, 1000 * 60 * 60));
}

// Waits until fd is ready for `events`; throws on timeout.
void wait_ready(int fd, short events, Clock::time_point deadline, const std::string& what) {
    while (true) {
        pollfd p{fd, events, 0};
        int n = ::poll(&p, 1, milliseconds_until(deadline));
        if (n > 0) return;
        if (n == 0) throw CommError(what + ": timed out");
        if (errno != EINTR) throw CommError(what + ": poll: " + std::strerror(errno));
    }
}

sockaddr_in ipv4(const std::string& address, std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
        throw CommError("not an IPv4 address: '" + address + "'");
    return a;
}

}  // namespace

Socket::~Socket() {
    if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

int Socket::release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
}

void Socket::send_all(const void* data, std::size_t size, Clock::time_point deadline, const std::string& what) const {
    auto* bytes = static_cast<const char*>(data);
    while (size > 0) {
        ssize_t n = ::send(fd_, bytes, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            bytes += n;
            size -= std::size_t(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_ready(fd_, POLLOUT, deadline, what);
        } else if (n < 0 && errno != EINTR) {
            throw CommError(what + ": send: " + std::strerror(errno));
        }
    }
}

void Socket::recv_all(void* data, std::size_t size, Clock::time_point deadline, const std::string& what) const {
    auto* bytes = static_cast<char*>(data);
    while (size > 0) {
        ssize_t n = ::recv(fd_, bytes, size, MSG_DONTWAIT);
        if (n > 0) {
            bytes += n;
            size -= std::size_t(n);
        } else if (n == 0) {
            throw CommError(what + ": connection closed");
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            wait_ready(fd_, POLLIN, deadline, what);
        } else if (errno != EINTR) {
            throw CommError(what + ": recv: " + std::strerror(errno));
        }
    }
}

void Socket::set_nonblocking() const { ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK); }

void Socket::tune_for_bulk() const {
    int one = 1, buffer = 4 << 20;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
}

std::string Socket::local_address() const {
    sockaddr_in a{};
    socklen_t length = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &length) != 0) return "127.0.0.1";
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    return text;
}

namespace {

// The first IPv4 address of an interface that `wanted` accepts, or empty.
template <class Wanted>
std::string find_ipv4(Wanted wanted) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return {};
    std::string address;
    for (ifaddrs* i = list; i && address.empty(); i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && wanted(*i)) {
            char text[INET_ADDRSTRLEN];
            ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
            address = text;
        }
    ::freeifaddrs(list);
    return address;
}

}  // namespace

std::string interface_ipv4(const std::string& name) {
    return find_ipv4([&](const ifaddrs& i) { return name == i.ifa_name; });
}

std::string external_ipv4() {
    return find_ipv4([](const ifaddrs& i) { return (i.ifa_flags & IFF_UP) && !(i.ifa_flags & IFF_LOOPBACK); });
}

std::string resolve_ipv4(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
    if (status != 0 || !found) throw CommError("cannot resolve host '" + host + "': " + ::gai_strerror(status));
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
    ::freeaddrinfo(found);
    return text;
}

Socket connect_to(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
    auto address = ipv4(resolve_ipv4(host), port);
    std::string last_error;
    while (true) {
        Socket socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!socket.valid()) throw CommError(std::string("socket: ") + std::strerror(errno));
        if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
            socket.tune_for_bulk();
            return socket;
        }
        last_error = std::strerror(errno);
        if (Clock::now() >= deadline)
            throw CommError("cannot connect to " + host + ":" + std::to_string(port) + ": " + last_error);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

Socket start_connect(const std::string& address, std::uint16_t port) {
    auto to = ipv4(address, port);
    Socket socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!socket.valid())
        throw CommError(std::string("socket: ") + std::strerror(errno) + (errno == EMFILE ? " (raise ulimit -n)" : ""));
    if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)
        throw CommError("cannot connect to " + address + ":" + std::to_string(port) + ": " + std::strerror(errno));
    socket.tune_for_bulk();
    return socket;
}

int connect_error(const Socket& socket) {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
    return error;
}

Listener::Listener(const std::string& address, std::uint16_t port, Clock::time_point wait_until) {
    auto bind_address = ipv4(address, port);
    for (bool said = false;;) {
        socket_ = Socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!socket_.valid()) throw CommError(std::string("socket: ") + std::strerror(errno));
        int one = 1;
        ::setsockopt(socket_.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(socket_.fd(), reinterpret_cast<sockaddr*>(&bind_address), sizeof bind_address) == 0) break;
        int error = errno;
        // An address that is not this host's own (a service address, NAT): all of its addresses
        // then, the step's secret being what keeps strangers out.
        if (error == EADDRNOTAVAIL && bind_address.sin_addr.s_addr != htonl(INADDR_ANY)) {
            bind_address.sin_addr.s_addr = htonl(INADDR_ANY);
            continue;
        }
        if (error != EADDRINUSE || Clock::now() >= wait_until)
            throw CommError("cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(error) +
                            (error == EADDRINUSE ? " (another process holds the port)" : ""));
        // Whoever holds it cannot pass for a rank (they lack the step's secret); it may let go.
        if (!said)
            std::fprintf(stderr, "trellis: %s:%u is held by another process: waiting for it\n", address.c_str(),
                         unsigned(port));
        said = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (::listen(socket_.fd(), 4096) != 0) throw CommError(std::string("listen: ") + std::strerror(errno));
    sockaddr_in bound{};
    socklen_t length = sizeof bound;
    ::getsockname(socket_.fd(), reinterpret_cast<sockaddr*>(&bound), &length);
    port_ = ntohs(bound.sin_port);
}

Socket Listener::accept(Clock::time_point deadline, const std::string& what) {
    while (true) {
        wait_ready(socket_.fd(), POLLIN, deadline, what);
        int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            Socket socket(fd);
            socket.tune_for_bulk();
            return socket;
        }
        if (errno != EINTR && errno != ECONNABORTED) throw CommError(what + ": accept: " + std::strerror(errno));
    }
}

Socket Listener::accept_waiting() {
    socket_.set_nonblocking();  // a caller that gave up between poll and accept must not block us
    while (true) {
        int fd = ::accept4(socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            Socket socket(fd);
            socket.tune_for_bulk();
            return socket;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Socket();
        if (errno != EINTR && errno != ECONNABORTED)
            throw CommError(std::string("accept: ") + std::strerror(errno) +
                            (errno == EMFILE ? " (raise ulimit -n)" : ""));
    }
}

}  // namespace trellis::comm
