// SPDX-License-Identifier: Apache-2.0
#include "agent/launch/rank_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "agent/binding/step_plan.hpp"
#include "agent/command.hpp"

namespace trellis::agent {

const std::vector<std::string>& rank_variables_to_clear() {
    static const std::vector<std::string> names = {"PMIX_RANK",    "PMIX_NAMESPACE", "PMI_RANK",      "PMI_SIZE",
                                                   "SLURM_PROCID", "SLURM_NTASKS",   "SLURM_LOCALID", "SLURM_NPROCS"};
    return names;
}

// One rank's process and its two output pipes, with any unfinished last line.
struct RankLauncher::Child {
    int rank;
    pid_t pid;
    int fds[2];
    std::string pending[2];
    bool exited = false;
    int status = 0;
};

namespace {

// Whole lines go out with the rank in front; stdout to stdout, stderr to stderr.
void emit_lines(std::string& pending, int rank, FILE* to, bool flush_all) {
    std::size_t start = 0;
    for (std::size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1)
        std::fprintf(to, "[%d] %.*s\n", rank, int(end - start), pending.data() + start);
    pending.erase(0, start);
    if (flush_all && !pending.empty()) {
        std::fprintf(to, "[%d] %s\n", rank, pending.c_str());
        pending.clear();
    }
    std::fflush(to);
}

}  // namespace

pid_t RankLauncher::start(const RankSpec& spec, int out_fd, int err_fd) {
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid > 0) {
        ::setpgid(pid, pid);  // as the child does: whichever runs first
        return pid;
    }
    // The child: its own process group, so that a signal to the rank reaches its children too.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    for (const auto& name : rank_variables_to_clear()) ::unsetenv(name.c_str());
    for (const auto& name : spec.unset) ::unsetenv(name.c_str());
    for (const auto& [name, value] : spec.env) ::setenv(name.c_str(), value.c_str(), 1);
    try {
        if (spec.cpus) apply_cpu_affinity(*spec.cpus);
        apply_memory_policy(spec.memory.policy, spec.memory.numa);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "trellis-agent: rank %d: %s\n", spec.rank, error.what());
    }
    std::vector<std::string> command = command_;
    if (container_) {
        try {
            auto entered = container_->enter(
                choices_, mount_destinations_,
                [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; }, command_, image_);
            if (spec.first_on_node) {
                if (!entered.start_note.empty())
                    std::fprintf(stderr, "trellis-agent: %s\n", entered.start_note.c_str());
                for (const auto& text : entered.notes) std::fprintf(stderr, "trellis-agent: %s\n", text.c_str());
            }
            for (const auto& [name, value] : entered.task.env) ::setenv(name.c_str(), value.c_str(), 1);
            command = entered.task.command;
        } catch (const std::exception& error) {
            std::fprintf(stderr, "trellis-agent: rank %d: %s\n", spec.rank, error.what());
            ::_exit(126);
        }
    }
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "trellis-agent: rank %d: cannot run %s: %s\n", spec.rank, argv[0], std::strerror(errno));
    ::_exit(127);
}

int RankLauncher::run(const std::vector<RankSpec>& ranks) {
    // Signals arrive through a descriptor, polled with the ranks' output.
    sigset_t handled;
    sigemptyset(&handled);
    for (int s : {SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGCHLD}) sigaddset(&handled, s);
    // A closed terminal or reader must not kill the agent and orphan the ranks.
    ::signal(SIGPIPE, SIG_IGN);
    ::sigprocmask(SIG_BLOCK, &handled, nullptr);
    int signals = ::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signals < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

    std::vector<Child> children;
    for (const auto& spec : ranks) {
        int out[2], err[2];
        if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
            throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        pid_t pid = start(spec, out[1], err[1]);
        ::close(out[1]);
        ::close(err[1]);
        children.push_back({spec.rank, pid, {out[0], err[0]}, {}, false, 0});
    }

    int result = 0, failed_rank = -1;
    using clock = std::chrono::steady_clock;
    auto kill_at = clock::time_point::max();  // when the stragglers get SIGKILL
    auto stop_all = [&](int signal) {
        for (auto& c : children)
            if (!c.exited) ::kill(-c.pid, signal);
    };
    auto ended_at = clock::time_point::max();  // when the last rank exited
    while (true) {
        bool all_exited = true, output_open = false;
        std::vector<pollfd> fds{{signals, POLLIN, 0}};
        std::vector<std::pair<std::size_t, int>> owners;
        for (std::size_t i = 0; i < children.size(); ++i) {
            all_exited = all_exited && children[i].exited;
            for (int k = 0; k < 2; ++k)
                if (children[i].fds[k] >= 0) {
                    fds.push_back({children[i].fds[k], POLLIN, 0});
                    owners.emplace_back(i, k);
                    output_open = true;
                }
        }
        if (all_exited && !output_open) break;
        // A rank's leftover background process may hold its output open: it gets two seconds
        // after the last rank, then its process group is killed and its output left unread.
        if (all_exited && ended_at == clock::time_point::max()) ended_at = clock::now();
        if (all_exited && clock::now() - ended_at > std::chrono::seconds(2)) {
            for (auto& c : children) {
                ::kill(-c.pid, SIGKILL);
                for (int& fd : c.fds)
                    if (fd >= 0) ::close(fd), fd = -1;
            }
            break;
        }
        ::poll(fds.data(), fds.size(), 200);
        if (clock::now() > kill_at) {
            stop_all(SIGKILL);
            kill_at = clock::time_point::max();
        }
        for (std::size_t f = 1; f < fds.size(); ++f) {
            if (!fds[f].revents) continue;
            auto& child = children[owners[f - 1].first];
            int k = owners[f - 1].second;
            char buffer[65536];
            ssize_t n = ::read(child.fds[k], buffer, sizeof buffer);
            if (n > 0) {
                child.pending[k].append(buffer, std::size_t(n));
                emit_lines(child.pending[k], child.rank, k == 0 ? stdout : stderr, false);
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                emit_lines(child.pending[k], child.rank, k == 0 ? stdout : stderr, true);
                ::close(child.fds[k]);
                child.fds[k] = -1;
            }
        }
        signalfd_siginfo info;
        while (::read(signals, &info, sizeof info) == sizeof info) {
            if (info.ssi_signo != SIGCHLD) {
                // Passed on (SIGHUP as SIGTERM): SIGTERM and SIGUSR1 let trellis-train save a
                // checkpoint.
                stop_all(info.ssi_signo == SIGHUP ? SIGTERM : int(info.ssi_signo));
                if (info.ssi_signo != SIGUSR1 && kill_at == clock::time_point::max())
                    kill_at = clock::now() + std::chrono::seconds(grace_seconds_);
            }
        }
        for (auto& child : children) {
            if (child.exited) continue;
            int status = 0;
            if (::waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
            child.exited = true;
            child.status = exit_status(status);
            if (child.status != 0 && failed_rank < 0) {
                failed_rank = child.rank;
                result = child.status;
                std::fprintf(stderr, "trellis-agent: rank %d exited with status %d: stopping the other ranks\n",
                             child.rank, child.status);
                std::fflush(stderr);
                stop_all(SIGTERM);
                kill_at = clock::now() + std::chrono::seconds(grace_seconds_);
            }
        }
    }
    ::close(signals);
    return result;
}

}  // namespace trellis::agent
