// SPDX-License-Identifier: Apache-2.0
// Holding files by descriptor: the agent checks a file on the descriptor it then uses, so that
// no one can swap the file between the check and the use. One owning descriptor type for all
// of agent/, and the words its refusals print a file's owner and mode with.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>

namespace trellis::agent {

// An open descriptor, closed when it goes; -1 holds none.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd();

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    // Hands the descriptor over to the caller, who closes it.
    int release() { return std::exchange(fd_, -1); }
    // The magic link (/proc/self/fd/N) that mount(2) and exec take for "this very object".
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

// `fd` moved to a number of 4 or above (the original closed), so that a helper keeps it at
// that number: start() sets up 0 to 3 for the program. -1 and failures give -1.
int above_helper_stdio(int fd);

// "1777", "0755": a mode's permission, sticky, setuid and setgid bits, as refusals print them.
std::string mode_text(mode_t mode);

// Whether the file `info` describes is `owner`'s and no one else may write it (neither its
// group nor others): what the agent asks of a file whose contents it trusts.
bool owned_alone_by(const struct stat& info, uid_t owner);
// "uid N with mode NNNN": whose a refused file is, as refusals print it.
std::string owner_and_mode(const struct stat& info);

// Calls `entry` with each name in the folder `dir` but "." and "..", from a duplicate of the
// descriptor (`dir` keeps its place). Returns false with errno set when it cannot be listed.
bool for_each_entry(int dir, const std::function<void(const std::string& name)>& entry);

}  // namespace trellis::agent
