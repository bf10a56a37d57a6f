// SPDX-License-Identifier: Apache-2.0
#include "agent/command.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "agent/files.hpp"
#include "common/error.hpp"

namespace trellis::agent {

namespace {

const char* system_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

}  // namespace

std::string find_program(const std::string& name, const std::string& path) {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
    std::stringstream in(path.empty() ? std::string(system_path) : path);
    for (std::string folder; std::getline(in, folder, ':');) {
        auto candidate = folder + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
}

std::vector<std::string> user_environment(uid_t uid) {
    std::vector<std::string> env = {std::string("PATH=") + system_path};
    if (passwd* entry = ::getpwuid(uid)) {
        env.push_back(std::string("HOME=") + entry->pw_dir);
        env.push_back(std::string("USER=") + entry->pw_name);
        env.push_back(std::string("LOGNAME=") + entry->pw_name);
    }
    return env;
}

bool become(const Identity& user) {
    if (::geteuid() == 0) {
        // The user's own supplementary groups, so that group-readable images and mounts work.
        passwd* entry = ::getpwuid(user.uid);
        if ((entry ? ::initgroups(entry->pw_name, user.gid) : ::setgroups(0, nullptr)) != 0) return false;
    } else if (::geteuid() != user.uid || ::getegid() != user.gid) {
        errno = EPERM;
        return false;
    }
    return ::setresgid(user.gid, user.gid, user.gid) == 0 && ::setresuid(user.uid, user.uid, user.uid) == 0;
}

namespace {

// In a forked child of a threaded caller (slurmstepd, srun): its message written with
// write(2), which takes no lock that another thread may have held at the fork.
void child_says(std::initializer_list<const char*> parts) {
    for (const char* part : parts)
        if (::write(2, part, std::strlen(part)) < 0) return;
}

// In the child: `fd` at a number above those it is about to set up (0 to 3), so that setting
// them cannot overwrite it; -1 stays -1.
int above_stdio(int fd) { return fd >= 0 && fd < 4 ? ::fcntl(fd, F_DUPFD, 4) : fd; }

// In the child: every descriptor from `first` on closed but those of `keep` (sorted), which
// lose close-on-exec.
void close_others(int first, const std::vector<int>& keep) {
    for (int fd : keep) {
        if (fd < first) continue;
        if (fd > first && ::close_range(unsigned(first), unsigned(fd - 1), 0) != 0)
            for (int other = first; other < fd; ++other) ::close(other);
        ::fcntl(fd, F_SETFD, 0);
        first = fd + 1;
    }
    if (::close_range(unsigned(first), ~0U, 0) != 0)
        for (int fd = first; fd < 65536; ++fd) ::close(fd);
}

// In the child: steps into the step's cgroups (with root's rights when the saved ids hold
// them), then becomes the user.
void become_in_child(const Identity& as) {
    if (!as.join_cgroups.empty()) {
        uid_t euid = ::geteuid();
        bool raised = euid != 0 && ::seteuid(0) == 0;
        for (const auto& procs : as.join_cgroups) {
            int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, "0", 1) != 1)
                child_says({"trellis: warning: cannot join ", procs.c_str(), ": ", std::strerror(errno), "\n"});
            if (fd >= 0) ::close(fd);
        }
        if (raised && ::seteuid(euid) != 0) ::_exit(126);
    }
    if (!become(as)) {
        child_says({"cannot become the job's user: ", std::strerror(errno), "\n"});
        ::_exit(126);
    }
}

}  // namespace

int exit_status(int wait_status) {
    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

int wait_for(pid_t pid) {
    int status = 0;
    // ECHILD: the caller ignores SIGCHLD, so the kernel reaped the child and kept no status;
    // its output is what tells.
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 0;
    return exit_status(status);
}

pid_t start(const Command& command) {
    const auto& argv = command.argv;
    if (argv.empty() || argv[0].empty() || (argv[0][0] != '/' && command.program < 0))
        throw UsageError("start: '" + (argv.empty() ? std::string() : argv[0]) + "' is not an absolute path");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // Looked up before the fork: the user database may take locks that another thread of the
    // caller (slurmstepd) holds at that moment, which the child would wait on for ever.
    std::vector<std::string> env =
        command.env.empty() ? user_environment(command.as ? command.as->uid : ::getuid()) : command.env;
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (int fd : command.keep)
        if (fd < 4) throw UsageError("start: a kept descriptor must be 4 or above (0 to 3 are set up for the program)");
    std::vector<int> keep = command.keep;
    keep.reserve(keep.size() + 1);  // the program's descriptor joins it in the child, without allocating
    const ChildStdio& stdio = command.stdio;
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid > 0) return pid;
    // (A parent gone before the request is not seen by it.)
    if (command.die_with_parent && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)) ::_exit(1);
    // Every source above 3 first: a caller with 0, 1 or 2 closed may hand one of those
    // numbers over, which setting up another would overwrite.
    int null = above_stdio(::open("/dev/null", O_RDWR));
    int in = above_stdio(stdio.in), out = above_stdio(stdio.out), err = above_stdio(stdio.err);
    int fd3 = above_stdio(command.fd3), program = above_stdio(command.program);
    ::dup2(in >= 0 ? in : null, 0);
    ::dup2(out >= 0 ? out : null, 1);
    ::dup2(err >= 0 ? err : null, 2);
    if (fd3 >= 0) ::dup2(fd3, 3);  // dup2 clears close-on-exec
    // Nothing else of the caller's (a task's pipes, slurmstepd's descriptors) goes along.
    if (program >= 0) keep.push_back(program);
    std::sort(keep.begin(), keep.end());
    close_others(fd3 >= 0 ? 4 : 3, keep);
    if (command.own_session) ::setsid();
    // No signal blocked or ignored, whatever the caller had: exec keeps both, and slurmstepd's
    // thread that runs the plugin blocks SIGTERM, by which a child (Apptainer) is asked to end.
    // The dispositions first: a signal let through by the mask must not run the caller's handler.
    for (int number = 1; number < NSIG; ++number) ::signal(number, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (command.as) become_in_child(*command.as);
    if (command.setup && !command.setup()) ::_exit(126);
    if (command.setup_in_fork) {
        pid_t fork = ::fork();
        if (fork < 0) ::_exit(126);
        if (fork > 0) ::_exit(wait_for(fork));
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!command.setup_in_fork()) ::_exit(126);
    }
    if (::chdir("/") != 0) ::_exit(126);
    // Kept open for fexecve, and closed by it.
    if (program >= 0) ::fcntl(program, F_SETFD, FD_CLOEXEC);
    if (program >= 0)
        ::fexecve(program, args.data(), envp.data());
    else
        ::execve(args[0], args.data(), envp.data());
    child_says({"cannot run ", args[0], ": ", std::strerror(errno), "\n"});
    ::_exit(127);
}

pid_t spawn(const std::vector<std::string>& argv, const ChildStdio& stdio, const Identity* as) {
    Command command;
    command.argv = argv;
    command.stdio = stdio;
    command.as = as;
    return start(command);
}

Finished run(const Command& command) {
    auto fail = [](const char* what) { throw std::runtime_error(std::string(what) + ": " + std::strerror(errno)); };
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) fail("pipe");
    Fd reading(out[0]), writing(out[1]);
    Fd errors(::memfd_create("helper-stderr", MFD_CLOEXEC));
    if (!errors) fail("memfd_create");
    Fd input;
    if (!command.input.empty()) {
        input = Fd(::memfd_create("helper-stdin", MFD_CLOEXEC));
        if (!input || ::write(input.get(), command.input.data(), command.input.size()) != ssize_t(command.input.size()))
            fail("cannot hold a helper's input");
        ::lseek(input.get(), 0, SEEK_SET);
    }
    Command started = command;
    started.stdio = {input.get(), writing.get(), errors.get()};
    pid_t pid = start(started);
    writing = Fd();
    input = Fd();
    Finished done;
    std::string pending;
    char buffer[4096];
    try {
        for (;;) {
            ssize_t n = ::read(reading.get(), buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            // Whole up to the limit, then nothing more: the kept output has no gaps.
            if (!done.truncated && done.out.size() + std::size_t(n) <= command.output_limit)
                done.out.append(buffer, std::size_t(n));
            else
                done.truncated = true;
            if (!command.on_line) continue;
            pending.append(buffer, std::size_t(n));
            for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
                command.on_line(pending.substr(0, end));
                pending.erase(0, end + 1);
            }
            // A line without end is passed on in pieces rather than held without bound.
            if (pending.size() > command.output_limit) {
                command.on_line(pending);
                pending.clear();
            }
        }
    } catch (...) {
        ::kill(pid, SIGKILL);
        wait_for(pid);
        throw;
    }
    reading = Fd();
    done.status = wait_for(pid);
    off_t size = ::lseek(errors.get(), 0, SEEK_END);
    ::lseek(errors.get(), size > 4096 ? size - 4096 : 0, SEEK_SET);
    done.err = read_bounded(errors.get(), 4096);
    while (!done.err.empty() && done.err.back() == '\n') done.err.pop_back();
    return done;
}

std::string read_bounded(int fd, std::size_t limit) {
    std::string text;
    char buffer[4096];
    while (text.size() < limit) {
        ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, limit - text.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, std::size_t(n));
    }
    return text;
}

std::string read_message(int memfd) {
    ::lseek(memfd, 0, SEEK_SET);
    std::string text = read_bounded(memfd, 4096);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

}  // namespace trellis::agent
