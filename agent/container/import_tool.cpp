#include "agent/container/import_tool.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "agent/command.hpp"
#include "agent/container/image_cache.hpp"

namespace trellis::agent {

namespace {

bool write_file(const char* path, const std::string& text) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ::close(fd);
    return ok;
}

// In the child: a new user namespace (and more of `flags`) mapping only the caller's uid and
// gid, to `inside` (0: root there).
bool map_caller(uid_t uid, gid_t gid, int flags, bool as_root) {
    return ::unshare(CLONE_NEWUSER | flags) == 0 && write_file("/proc/self/setgroups", "deny") &&
           write_file("/proc/self/uid_map", (as_root ? "0 " : std::to_string(uid) + " ") + std::to_string(uid) + " 1") &&
           write_file("/proc/self/gid_map", (as_root ? "0 " : std::to_string(gid) + " ") + std::to_string(gid) + " 1");
}

int set_mount_attributes(const char* path, unsigned flags, std::uint64_t set, std::uint64_t clear) {
    mount_attr attributes{};
    attributes.attr_set = set;
    attributes.attr_clr = clear;
    return int(::syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attributes, sizeof attributes));
}

// In the child: every mount read-only, then `writable` bound over itself and writable again,
// in a mount namespace of its own (the caller's mounts are not touched), and a PID namespace
// of its own whose /proc shows only the tool: /proc/PID/root and /proc/PID/cwd of another of
// the user's processes would otherwise lead back to the writable mounts. The caller goes on
// as the tool's parent (it must fork once more: the tool is the new namespace's first
// process) and returns only in the tool.
bool confine_writes(uid_t uid, gid_t gid, const std::vector<std::string>& writable) {
    if (!map_caller(uid, gid, CLONE_NEWNS | CLONE_NEWPID, false) ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        set_mount_attributes("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) != 0)
        return false;
    for (const auto& folder : writable)
        if (::mount(folder.c_str(), folder.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
            set_mount_attributes(folder.c_str(), 0, 0, MOUNT_ATTR_RDONLY) != 0)
            return false;
    pid_t tool = ::fork();
    if (tool < 0) return false;
    if (tool > 0) {
        int status = 0;
        while (::waitpid(tool, &status, 0) < 0 && errno == EINTR) {
        }
        ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    return ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
}

}  // namespace

void require_tool(const std::string& program, const char* key) {
    if (program.empty() || program[0] != '/' || ::access(program.c_str(), X_OK) != 0)
        throw ImageImportError(std::string("cannot run ") + key + " '" + program + "': " +
                               (program.empty() || program[0] != '/' ? "not an absolute path" : std::strerror(errno)) +
                               " (install it, or set [container] " + key + " in trellis.toml to its absolute path)");
}

ToolResult run_tool(const ToolRun& run) {
    std::vector<char*> args;
    for (const auto& a : run.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env = user_environment(::getuid());
    if (!run.tmpdir.empty()) env.push_back("TMPDIR=" + run.tmpdir);
    if (!run.home.empty())
        for (auto& entry : env)
            if (entry.starts_with("HOME=")) entry = "HOME=" + run.home;
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw ImageImportError(std::string("pipe: ") + std::strerror(errno));
    int error_file = ::memfd_create("tool-stderr", MFD_CLOEXEC);
    int input = -1;
    if (!run.input.empty()) {
        input = ::memfd_create("tool-stdin", MFD_CLOEXEC);
        if (input < 0 || ::write(input, run.input.data(), run.input.size()) != ssize_t(run.input.size()))
            throw ImageImportError(std::string("cannot hold a tool's input: ") + std::strerror(errno));
        ::lseek(input, 0, SEEK_SET);
    }
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    pid_t pid = ::fork();
    if (pid < 0) throw ImageImportError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::dup2(input >= 0 ? input : ::open("/dev/null", O_RDONLY), 0);
        ::dup2(out[1], 1);
        ::dup2(error_file, 2);
        // dup2 clears close-on-exec, except onto itself.
        if (run.fd3 >= 0) run.fd3 == 3 ? ::fcntl(3, F_SETFD, 0) : ::dup2(run.fd3, 3);
        if (::close_range(run.fd3 >= 0 ? 4 : 3, ~0U, 0) != 0)
            for (int fd = run.fd3 >= 0 ? 4 : 3; fd < 65536; ++fd) ::close(fd);
        bool confined = run.writable_only.empty() ? !run.as_namespace_root || map_caller(uid, gid, 0, true)
                                                  : confine_writes(uid, gid, run.writable_only);
        if (!confined) {
            // Not strerror's words for ENOSPC, which would read as a full disk.
            std::fprintf(stderr, "cannot make a user namespace%s: %s\n",
                         run.writable_only.empty() ? "" : " whose mounts are read-only but its own folder",
                         errno == ENOSPC ? "the limit of user namespaces is reached (user.max_user_namespaces)"
                                         : std::strerror(errno));
            ::_exit(126);
        }
        ::execve(args[0], args.data(), envp.data());
        std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
        ::_exit(127);
    }
    ::close(out[1]);
    if (input >= 0) ::close(input);
    ToolResult result;
    std::string pending;
    char buffer[4096];
    for (;;) {
        ssize_t n = ::read(out[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (result.out.size() + std::size_t(n) <= run.output_limit) result.out.append(buffer, std::size_t(n));
        else result.truncated = true;
        if (!run.progress) continue;
        pending.append(buffer, std::size_t(n));
        for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
            *run.progress << run.progress_prefix << pending.substr(0, end) << '\n' << std::flush;
            pending.erase(0, end + 1);
        }
    }
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    off_t size = ::lseek(error_file, 0, SEEK_END);
    ::lseek(error_file, size > 4096 ? size - 4096 : 0, SEEK_SET);
    result.error = read_bounded(error_file, 4096);
    while (!result.error.empty() && result.error.back() == '\n') result.error.pop_back();
    ::close(error_file);
    return result;
}

}  // namespace trellis::agent
