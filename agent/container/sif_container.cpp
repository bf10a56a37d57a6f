// SPDX-License-Identifier: Apache-2.0
#include "agent/container/sif_container.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "agent/command.hpp"
#include "agent/container/namespaces.hpp"

namespace trellis::agent {

namespace {

// Inside the container: Apptainer gives a contained /tmp of its own.
const char* pause_inside = "/tmp/.trellis-pause";

// The host's /proc, opened before the agent joins Apptainer's mount namespace (whose /proc is
// Apptainer's choice, and may be none): every process is read through it, then and later.
int host_proc() {
    static int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd;
}

// A process's state, parent and session, from its stat line. read(2) rather than a stream:
// reading the stat of a process that exits meanwhile fails with ESRCH, which std::ifstream
// throws as an exception; here it only means the process is gone (state 0, both ids 0).
struct ProcessIds {
    char state = 0;
    pid_t parent = 0;
    pid_t session = 0;
};
ProcessIds ids_of(pid_t pid) {
    int fd = ::openat(host_proc(), (std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buffer[1024];  // "PID (COMM) S PPID PGRP SESSION ...": COMM is at most 16 bytes
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (got <= 0) return {};
    std::string stat(buffer, size_t(got));
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) return {};
    char state = 0;
    long parent = 0, group = 0, session = 0;
    if (std::sscanf(stat.c_str() + close + 2, "%c %ld %ld %ld", &state, &parent, &group, &session) != 4) return {};
    return {state, pid_t(parent), pid_t(session)};
}

std::vector<pid_t> all_processes() {
    std::vector<pid_t> pids;
    // A description of its own (not a dup, which would share the listing's offset).
    int fd = ::openat(host_proc(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* folder = fd < 0 ? nullptr : ::fdopendir(fd);
    if (!folder) {
        if (fd >= 0) ::close(fd);
        return pids;
    }
    while (const dirent* entry = ::readdir(folder)) {
        pid_t pid = pid_t(std::atoi(entry->d_name));
        if (pid > 0) pids.push_back(pid);
    }
    ::closedir(folder);
    return pids;
}

// Whether `entry` of the host's /proc (PID/exe) is the file `b`.
bool same_file(const std::string& entry, const struct stat& b) {
    struct stat info {};
    return ::fstatat(host_proc(), entry.c_str(), &info, 0) == 0 && info.st_dev == b.st_dev && info.st_ino == b.st_ino;
}

// The process running trellis-pause among `root` and its descendants, or 0.
pid_t find_pause(pid_t root, const struct stat& pause) {
    std::map<pid_t, pid_t> parents;
    for (pid_t pid : all_processes()) parents[pid] = ids_of(pid).parent;
    for (const auto& [pid, parent] : parents) {
        pid_t up = pid;
        for (int depth = 0; up > 1 && up != root && depth < 64; ++depth) up = parents.count(up) ? parents[up] : 0;
        if (up == root && same_file(std::to_string(pid) + "/exe", pause)) return pid;
    }
    return 0;
}

// Whether Apptainer has ended (or is no child of ours), leaving it unreaped (WNOWAIT): while
// its zombie holds its pid, which names its session, no other process can take that pid.
bool has_ended(pid_t apptainer) {
    siginfo_t info{};
    while (::waitid(P_PID, id_t(apptainer), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        if (errno != EINTR) return true;
    return info.si_pid == apptainer;
}

// SIGKILL to Apptainer (its zombie keeps its pid, and so its session's id, from being taken),
// then to whatever is left of its session (all of it when Apptainer hung, else a helper that
// outlived it) until nothing that is alive is (a process may fork while /proc is read), then
// Apptainer reaped. Only while Apptainer is still ours, running or unreaped: once reaped, its
// pid could name another's session.
void end_session(pid_t apptainer) {
    siginfo_t info{};
    if (::waitid(P_PID, id_t(apptainer), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return;
    ::kill(apptainer, SIGKILL);
    for (int round = 0; round < 10; ++round) {
        int found = 0;
        for (pid_t pid : all_processes()) {
            ProcessIds ids = ids_of(pid);
            if (pid == apptainer || ids.session != apptainer || ids.state == 'Z') continue;
            ::kill(pid, SIGKILL);
            ++found;
        }
        if (found == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    while (::waitpid(apptainer, nullptr, 0) < 0 && errno == EINTR) {}
}

}  // namespace

std::vector<std::string> apptainer_command(const ContainerSpec& spec) {
    // --userns: the user-namespace mode even where a setuid starter is installed, since the
    // tasks (the user's own processes) can join only namespaces their user owns. --contain: a
    // private /tmp and a minimal /dev (the devices are bound in); no PID namespace, so that
    // tasks joining the mount namespace see a /proc that matches them.
    std::vector<std::string> argv = {spec.apptainer, "exec", "--userns", "--contain", "--no-home", "--cleanenv"};
    argv.insert(argv.end(), {"--bind", spec.pause_program + ":" + pause_inside + ":ro"});
    for (const auto& node : spec.device_nodes)
        argv.insert(argv.end(), {"--bind", node.host_path + ":" + node.container_path});
    for (const auto& mount : spec.mounts) argv.insert(argv.end(), {"--bind", format_mount(mount)});
    for (const auto& mount : spec.system_mounts) argv.insert(argv.end(), {"--bind", format_mount(mount)});
    argv.insert(argv.end(), {spec.image.path, pause_inside});
    return argv;
}

void stop_apptainer(pid_t apptainer) {
    // On SIGTERM Apptainer ends its container and unmounts the image, and the squashfuse_ll
    // serving it (in a process group of its own) exits; SIGKILL would leave that helper running
    // under pid 1, holding the image open. It is given 3 s (the caller of `trellis-agent
    // prepare` gives that 5 in all).
    ::kill(apptainer, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!has_ended(apptainer) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    end_session(apptainer);
}

pid_t enter_sif_container(const ContainerSpec& spec) {
    struct stat pause {};
    if (::stat(spec.pause_program.c_str(), &pause) != 0)
        throw ContainerError("trellis-pause is missing at " + spec.pause_program);
    if (host_proc() < 0) throw ContainerError(std::string("cannot open /proc: ") + std::strerror(errno));
    int errors = ::memfd_create("apptainer-errors", MFD_CLOEXEC);
    ChildStdio stdio;
    stdio.err = errors;
    pid_t apptainer = spawn(apptainer_command(spec), stdio);
    auto stop = [&] { stop_apptainer(apptainer); };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    pid_t inside = 0;
    while (!(inside = find_pause(apptainer, pause))) {
        if (has_ended(apptainer)) {
            std::string message = read_message(errors);
            end_session(apptainer);
            throw ContainerError(spec.apptainer +
                                 " stopped before the container ran: " + (message.empty() ? "no message" : message));
        }
        if (std::chrono::steady_clock::now() > deadline) {
            stop();
            throw ContainerError(spec.apptainer + " did not start the container within 60 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Its namespaces are held by descriptor, checked to be its still, then joined.
    std::vector<std::pair<int, int>> held;
    std::string failure;
    try {
        held = open_namespaces(inside);
    } catch (const ContainerError& error) {
        failure = error.what();
    }
    if (failure.empty() && find_pause(apptainer, pause) != inside)
        failure = "the container's process ended while it was joined";
    bool own_mount_namespace = false;
    for (auto [fd, kind] : held) {
        own_mount_namespace = own_mount_namespace || kind == CLONE_NEWNS;
        if (failure.empty() && ::setns(fd, kind) != 0)
            failure = std::string("cannot join the ") + namespace_name(kind) + " namespace " + spec.apptainer +
                      " made (" + std::strerror(errno) +
                      "): the user can join only an Apptainer container in its user-namespace mode, not one from a "
                      "setuid installation";
    }
    if (failure.empty() && !own_mount_namespace)
        failure = spec.apptainer + " ran trellis-pause without a mount namespace of its own";
    for (auto [fd, _] : held) ::close(fd);
    if (failure.empty() && ::chdir("/") != 0) failure = std::string("chdir /: ") + std::strerror(errno);
    if (!failure.empty()) {
        stop();
        throw ContainerError(failure);
    }
    return apptainer;
}

}  // namespace trellis::agent
