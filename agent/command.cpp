#include "agent/command.hpp"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace trellis::agent {

std::string CommandResult::describe(const std::string& what) const {
    std::string text = what + ": exit status " + std::to_string(status);
    std::string last;
    std::stringstream in(errors.empty() ? output : errors);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) last = line;
    return last.empty() ? text : text + ": " + last;
}

std::string find_program(const std::string& name) {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
    const char* path = std::getenv("PATH");
    std::stringstream in(path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for (std::string folder; std::getline(in, folder, ':');) {
        auto candidate = (std::filesystem::path(folder.empty() ? "." : folder) / name).string();
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
}

bool become(const Identity& user) {
    if (::getuid() == user.uid && ::geteuid() == user.uid && ::getgid() == user.gid) return true;
    // The user's own supplementary groups, so that group-readable images and mounts work.
    passwd* entry = ::getpwuid(user.uid);
    int groups = entry ? ::initgroups(entry->pw_name, user.gid) : ::setgroups(0, nullptr);
    return groups == 0 && ::setgid(user.gid) == 0 && ::setuid(user.uid) == 0;
}

std::string canonical_path_as(const Identity& user, const std::string& path) {
    int answer[2];
    if (::pipe2(answer, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::close(answer[0]);
        char resolved[PATH_MAX];
        std::string reply;
        if (!become(user))
            reply = std::string("!cannot become uid ") + std::to_string(user.uid) + ": " + std::strerror(errno);
        else if (!::realpath(path.c_str(), resolved))
            reply = std::string("!") + std::strerror(errno);
        else
            reply = resolved;
        if (::write(answer[1], reply.data(), reply.size()) < 0) ::_exit(1);
        ::_exit(0);
    }
    ::close(answer[1]);
    std::string reply;
    char buffer[4096];
    for (ssize_t n; (n = ::read(answer[0], buffer, sizeof buffer)) != 0;)
        if (n > 0)
            reply.append(buffer, std::size_t(n));
        else if (errno != EINTR)
            break;
    ::close(answer[0]);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (reply.empty() || reply[0] == '!') throw std::runtime_error(reply.empty() ? "no answer" : reply.substr(1));
    return reply;
}

namespace {

std::string read_all(int fd) {
    std::string text;
    ::lseek(fd, 0, SEEK_SET);
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, std::size_t(n));
    ::close(fd);
    return text;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::optional<Identity> as,
                          std::chrono::seconds limit) {
    if (argv.empty()) throw std::invalid_argument("run_command: no program");
    auto program = find_program(argv[0]);
    if (program.empty()) throw std::runtime_error(argv[0] + ": not found in PATH");
    // Output into memory files, not pipes: a program that leaves a daemon behind (runc run
    // --detach) would hold a pipe open for ever, and waiting for its end would hang.
    int out = ::memfd_create("trellis-command-out", MFD_CLOEXEC);
    int err = ::memfd_create("trellis-command-err", MFD_CLOEXEC);
    if (out < 0 || err < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        int null = ::open("/dev/null", O_RDONLY);
        ::dup2(null, 0);
        ::dup2(out, 1);
        ::dup2(err, 2);
        // Nothing else of the caller's (a task's pipes, slurmstepd's descriptors) goes along.
        ::close_range(3, ~0U, 0);
        // A new session: the time limit can take the program's own children with it.
        ::setsid();
        if (as && !become(*as)) {
            std::fprintf(stderr, "cannot become uid %u gid %u: %s\n", as->uid, as->gid, std::strerror(errno));
            ::_exit(126);
        }
        ::execv(program.c_str(), args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", program.c_str(), std::strerror(errno));
        ::_exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (true) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            ::close(out);
            ::close(err);
            throw std::runtime_error(argv[0] + " did not finish within " + std::to_string(limit.count()) + " s");
        }
        ::usleep(5000);
    }
    CommandResult result;
    result.output = read_all(out);
    result.errors = read_all(err);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

}  // namespace trellis::agent
