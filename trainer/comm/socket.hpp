// SPDX-License-Identifier: Apache-2.0
// TCP sockets with deadlines: every blocking call takes one, so that a dead or silent peer
// becomes an error after the communication timeout instead of a hang.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace trellis::comm {

using Clock = std::chrono::steady_clock;

class Socket {
public:
    Socket() = default;
    explicit Socket(int fd) : fd_(fd) {}
    ~Socket();
    Socket(Socket&& other) noexcept : fd_(other.release()) {}
    Socket& operator=(Socket&& other) noexcept;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    int fd() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int release();

    // Whole buffers or an exception (CommError): "what" names the peer for the message.
    void send_all(const void* data, std::size_t size, Clock::time_point deadline, const std::string& what) const;
    void recv_all(void* data, std::size_t size, Clock::time_point deadline, const std::string& what) const;
    void set_nonblocking() const;
    void tune_for_bulk() const;  // TCP_NODELAY and large buffers

    // The local address this socket uses ("10.0.0.5"), for advertising a reachable endpoint.
    std::string local_address() const;

private:
    int fd_ = -1;
};

// The IPv4 address of network interface NAME ("ib0"), or empty when it has none.
std::string interface_ipv4(const std::string& name);

// The IPv4 address of the first interface that is up and not loopback, or empty: what other
// nodes can reach when the host name resolves to 127.0.1.1 (Debian's /etc/hosts).
std::string external_ipv4();

// Resolves HOST (a name or an address) to IPv4 dotted form; throws CommError.
std::string resolve_ipv4(const std::string& host);

// Connects to host:port, retrying until the deadline (the listener may not be up yet).
Socket connect_to(const std::string& host, std::uint16_t port, Clock::time_point deadline);

// Starts connecting a non-blocking socket to address:port (IPv4, dotted): writable once done,
// when connect_error says how it went (0, or an errno). Throws CommError when it cannot start.
Socket start_connect(const std::string& address, std::uint16_t port);
int connect_error(const Socket& socket);

class Listener {
public:
    // Binds address:port (port 0: any free port) and listens. A port that another process holds
    // is tried again until `wait_until` (default: not at all), saying so once on stderr.
    Listener(const std::string& address, std::uint16_t port, Clock::time_point wait_until = {});
    std::uint16_t port() const { return port_; }
    int fd() const { return socket_.fd(); }
    void set_nonblocking() const { socket_.set_nonblocking(); }
    Socket accept(Clock::time_point deadline, const std::string& what);
    // A waiting connection, non-blocking, or an invalid Socket when none is waiting.
    Socket accept_waiting();

private:
    Socket socket_;
    std::uint16_t port_ = 0;
};

}  // namespace trellis::comm
