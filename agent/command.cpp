#include "agent/command.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::agent {

namespace {

const char* system_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

}  // namespace

std::string find_program(const std::string& name) {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
    std::stringstream in(system_path);
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

pid_t spawn(const std::vector<std::string>& argv, const ChildStdio& stdio, const Identity* as) {
    if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
        throw UsageError("spawn: '" + (argv.empty() ? std::string() : argv[0]) + "' is not an absolute path");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // Looked up before the fork: the user database may take locks that another thread of the
    // caller (slurmstepd) holds at that moment, which the child would wait on for ever.
    std::vector<std::string> env = user_environment(as ? as->uid : ::getuid());
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid > 0) return pid;
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(stdio.in >= 0 ? stdio.in : null, 0);
    ::dup2(stdio.out >= 0 ? stdio.out : null, 1);
    ::dup2(stdio.err >= 0 ? stdio.err : null, 2);
    // Nothing else of the caller's (a task's pipes, slurmstepd's descriptors) goes along.
    if (::close_range(3, ~0U, 0) != 0)
        for (int fd = 3; fd < 65536; ++fd) ::close(fd);
    ::setsid();
    // No signal blocked or ignored, whatever the caller had: exec keeps both, and slurmstepd's
    // thread that runs the plugin blocks SIGTERM, by which a child (Apptainer) is asked to end.
    // The dispositions first: a signal let through by the mask must not run the caller's handler.
    for (int number = 1; number < NSIG; ++number) ::signal(number, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (as && !as->join_cgroups.empty()) {
        uid_t euid = ::geteuid();
        bool raised = euid != 0 && ::seteuid(0) == 0;
        for (const auto& procs : as->join_cgroups) {
            int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, "0", 1) != 1)
                std::fprintf(stderr, "trellis: warning: cannot join %s: %s\n", procs.c_str(), std::strerror(errno));
            if (fd >= 0) ::close(fd);
        }
        if (raised && ::seteuid(euid) != 0) ::_exit(126);
    }
    if (as && !become(*as)) {
        std::fprintf(stderr, "cannot become uid %u gid %u: %s\n", as->uid, as->gid, std::strerror(errno));
        ::_exit(126);
    }
    if (::chdir("/") != 0) ::_exit(126);
    ::execve(args[0], args.data(), envp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
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
