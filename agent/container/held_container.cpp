// SPDX-License-Identifier: Apache-2.0
#include "agent/container/held_container.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "agent/image/settings.hpp"
#include "agent/container/namespaces.hpp"
#include "common/error.hpp"

namespace trellis::agent {

namespace {

// Reaps `pid`, waiting at most `limit` (a helper stuck on a hung filesystem must not hold
// slurmstepd): SIGKILL to its session after that, and no further wait.
void reap(pid_t pid, std::chrono::milliseconds limit, int* status = nullptr) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    int ignored = 0;
    while (true) {
        pid_t done = ::waitpid(pid, status ? status : &ignored, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR)) return;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::usleep(20000);
            ::waitpid(pid, status ? status : &ignored, WNOHANG);
            return;
        }
        ::usleep(2000);
    }
}

}  // namespace

HeldContainer::~HeldContainer() {
    for (auto [fd, _] : namespaces_) ::close(fd);
    if (helper_input_ >= 0) ::close(helper_input_);
    if (helper_ > 0) reap(helper_, std::chrono::seconds(5));
}

HeldContainer HeldContainer::make(const std::vector<std::string>& prepare, const Identity& user,
                                  std::chrono::seconds limit) {
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) throw ContainerError(std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
        ::close(to_child[0]), ::close(to_child[1]);
        throw ContainerError(std::string("pipe: ") + std::strerror(errno));
    }
    int errors = ::memfd_create("trellis-prepare-errors", MFD_CLOEXEC);
    ChildStdio stdio{to_child[0], from_child[1], errors};
    pid_t helper = -1;
    try {
        helper = spawn(prepare, stdio, &user);
    } catch (...) {
        for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1], errors}) ::close(fd);
        throw;
    }
    ::close(to_child[0]);
    ::close(from_child[1]);

    // "ready\n", or the end of its output when it gave up.
    std::string said;
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (said.find('\n') == std::string::npos && said.size() < 64) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd wait{from_child[0], POLLIN, 0};
        if (left.count() <= 0) break;
        int ready = ::poll(&wait, 1, int(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        char buffer[64];
        ssize_t n = ::read(from_child[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        said.append(buffer, std::size_t(n));
    }
    HeldContainer held;
    std::string failure;
    // A squashfs image's settings: one more line, of at most the settings' limit and 1 MiB
    // for CDI's variables and the notes.
    if (said.starts_with("ready hold settings\n")) {
        std::string rest = said.substr(std::strlen("ready hold settings\n"));
        while (rest.find('\n') == std::string::npos && rest.size() < settings_limit + (1u << 20)) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            pollfd wait{from_child[0], POLLIN, 0};
            if (left.count() <= 0 || ::poll(&wait, 1, int(left.count())) <= 0) break;
            char buffer[65536];
            ssize_t n = ::read(from_child[0], buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            rest.append(buffer, std::size_t(n));
        }
        if (rest.find('\n') == std::string::npos) {
            said = "ready hold settings, without them";
        } else {
            held.settings_ = rest.substr(0, rest.find('\n'));
            said = "ready hold\n";
        }
    }
    bool hold = said == "ready hold\n";
    if (hold) said = "ready\n";
    if (said == "ready\n") {
        try {
            held.namespaces_ = open_namespaces(helper);
        } catch (const ContainerError& error) {
            failure = error.what();
        }
        uid_t owner = ~0u;
        bool user_ns = !held.namespaces_.empty() && held.namespaces_.front().second == CLONE_NEWUSER;
        bool mount_ns = false;
        for (auto [fd, kind] : held.namespaces_) mount_ns = mount_ns || kind == CLONE_NEWNS;
        if (failure.empty() &&
            (!user_ns || ::ioctl(held.namespaces_.front().first, NS_GET_OWNER_UID, &owner) != 0 || owner != user.uid))
            failure = "the container's user namespace does not belong to uid " + std::to_string(user.uid);
        if (failure.empty() && !mount_ns) failure = "the container has no mount namespace of its own";
    }
    ::close(from_child[0]);
    if (hold && failure.empty()) {
        // Kept running until `held` goes; its stdin ending then stops it. A line first: the
        // namespaces are held, so it may make itself untraceable.
        if (::write(to_child[1], "\n", 1) != 1) {}
        held.helper_ = helper;
        held.helper_input_ = to_child[1];
        ::close(errors);
        return held;
    }
    ::close(to_child[1]);  // the helper's stdin ends: it exits
    int status = 0;
    if (said != "ready\n" && ::waitpid(helper, &status, WNOHANG) == 0) ::kill(-helper, SIGKILL);
    reap(helper, std::chrono::seconds(10), &status);
    std::string errors_text = read_message(errors);
    ::close(errors);
    if (said != "ready\n") {
        if (said.empty() && errors_text.empty())
            throw ContainerError(prepare[0] + " prepare gave no answer within " + std::to_string(limit.count()) + " s");
        // The agent's own words, without its name: "refused: ..." (status 3), "container: ...".
        for (const std::string prefix : {"trellis-agent prepare: ", "container: "})
            if (errors_text.rfind(prefix, 0) == 0) errors_text.erase(0, prefix.size());
        int code = exit_status(status);
        if (code == 3 && errors_text.rfind("refused: ", 0) == 0) throw PolicyError(errors_text.substr(9));
        if (code == 2) throw UsageError(errors_text);
        throw ContainerError(errors_text.empty() ? prepare[0] + " prepare: " + said : errors_text);
    }
    if (!failure.empty()) throw ContainerError(failure);
    return held;
}

std::string HeldContainer::join(const std::vector<std::string>& directories) const {
    for (auto [fd, kind] : namespaces_)
        if (::setns(fd, kind) != 0)
            throw ContainerError(std::string("cannot join the container's ") + namespace_name(kind) +
                                 " namespace: " + std::strerror(errno));
    for (const auto& directory : directories)
        if (!directory.empty() && ::chdir(directory.c_str()) == 0) return directory;
    if (::chdir("/") != 0) throw ContainerError(std::string("chdir /: ") + std::strerror(errno));
    return "/";
}

}  // namespace trellis::agent

namespace trellis::agent {

EnteredTask HeldContainer::enter(const SettingsChoices& choices, const std::vector<std::string>& mount_destinations,
                                 const std::function<bool(const std::string&)>& task_has,
                                 std::vector<std::string> command, const std::string& image) const {
    char cwd[4096] = {};
    if (!::getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    EnteredTask entered;
    entered.task = task_in_image(settings_, choices, cwd, mount_destinations, task_has, std::move(command));
    std::string started = join(entered.task.directories);
    entered.start_note = start_directory_note(started, cwd, settings_, image);
    entered.notes = settings_notes(settings_);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        throw ContainerError(std::string("cannot set no_new_privs: ") + std::strerror(errno));
    return entered;
}

}  // namespace trellis::agent
