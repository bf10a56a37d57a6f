// SPDX-License-Identifier: Apache-2.0
// A rank's listener and the callers on it that have not yet proven the step's secret
// (handshake.hpp). Anyone can connect to an open port, so the gate bounds what a stranger
// costs: at most `most_waiting` callers at once, each given `claim_time` to make its claim,
// read as it comes without blocking or spinning. When all places are taken, the oldest caller
// makes room for the next once it has had `room_after` (a rank of the step answers the
// challenge in a round trip), so that strangers holding connections open cannot keep the real
// ranks out; when the process runs out of descriptors the gate stops accepting for a moment
// instead of failing. A caller that does not prove the secret is dropped and logged, never
// fatal to the job.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainer/comm/handshake.hpp"
#include "trainer/comm/socket.hpp"

namespace trellis::comm {

// What the gate lets in: claims for `purpose`, made to `rank` by another rank of `size` (by
// `caller` alone when it is not -1), for a stream below `streams`.
struct Expected {
    Purpose purpose;
    int rank = 0, size = 1, streams = 0, caller = -1;
};

struct Admitted {
    Socket socket;
    Claim claim;
};

class Gate {
public:
    static constexpr std::size_t most_waiting = 128;
    static constexpr auto claim_time = std::chrono::seconds(2);
    static constexpr auto room_after = std::chrono::milliseconds(250);

    // Listens on address:port (port 0: any); `owner` names this end in the log ("env
    // rendezvous, rank 0"). With `wait_until`, a port another process holds is waited for.
    Gate(const std::string& address, std::uint16_t port, const JobSecret& secret, Expected expected, std::string owner,
         Clock::time_point wait_until = {});
    Gate(const Gate&) = delete;  // its callers' readers hold its secret
    Gate& operator=(const Gate&) = delete;

    std::uint16_t port() const { return listener_.port(); }
    // The descriptors to poll for reading: the listener's (unless paused) and the callers'.
    std::vector<int> fds() const;
    // When a poll should return at the latest: a caller's time ends or a pause does.
    Clock::time_point next_event() const;
    // After a poll: serves `fd` (the listener or a caller; -1: only the clock) and returns a
    // caller whose claim was proven, the proof sent back to it.
    std::optional<Admitted> serve(int fd);
    // Serves callers until one is admitted; CommError naming `waiting_for` at the deadline.
    Admitted admit(Clock::time_point deadline, const std::string& waiting_for);

private:
    struct Caller {
        Socket socket;
        Clock::time_point since, until;
        ClaimReader reader;
        std::string from;  // address:port, for the log
    };
    bool room() const;  // for one more caller, making room if need be
    void accept_waiting();
    void expire();
    void log_dropped(const std::string& from, const std::string& why);
    std::string check(const Claim& claim) const;  // empty when it is one the gate lets in

    JobSecret secret_;
    Expected expected_;
    std::string owner_;
    Listener listener_;
    std::vector<Caller> callers_;
    Clock::time_point paused_until_{};
    // The log says the first drop and then at most one line every few seconds with a count.
    int unlogged_ = 0;
    Clock::time_point logged_at_{};
};

}  // namespace trellis::comm
