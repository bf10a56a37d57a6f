#include "agent/container/sif_container.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "agent/command.hpp"
#include "agent/container/namespaces.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

// Inside the container: Apptainer gives a contained /tmp of its own.
const char* pause_inside = "/tmp/.trellis-pause";

// read(2) rather than a stream: reading the stat of a process that exits meanwhile fails with
// ESRCH, which std::ifstream throws as an exception; here it only means the process is gone.
pid_t parent_of(pid_t pid) {
    int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buffer[1024];  // "PID (COMM) S PPID ...": COMM is at most 16 bytes, PPID comes next
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (got <= 0) return 0;
    std::string stat(buffer, size_t(got));
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) return 0;
    return pid_t(std::atoi(stat.c_str() + close + 4));  // ") S PPID"
}

bool same_file(const std::string& a, const struct stat& b) {
    struct stat info {};
    return ::stat(a.c_str(), &info) == 0 && info.st_dev == b.st_dev && info.st_ino == b.st_ino;
}

// The process running trellis-pause among `root` and its descendants, or 0.
pid_t find_pause(pid_t root, const struct stat& pause) {
    std::map<pid_t, pid_t> parents;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator("/proc", error)) {
        pid_t pid = pid_t(std::atoi(entry.path().filename().c_str()));
        if (pid > 0) parents[pid] = parent_of(pid);
    }
    for (const auto& [pid, parent] : parents) {
        pid_t up = pid;
        for (int depth = 0; up > 1 && up != root && depth < 64; ++depth) up = parents.count(up) ? parents[up] : 0;
        if (up == root && same_file("/proc/" + std::to_string(pid) + "/exe", pause)) return pid;
    }
    return 0;
}

}  // namespace

std::vector<std::string> apptainer_command(const ContainerSpec& spec) {
    // --contain: a private /tmp and a minimal /dev (the devices are bound in); no PID
    // namespace, so that tasks joining the mount namespace see a /proc that matches them.
    std::vector<std::string> argv = {spec.apptainer, "exec", "--contain", "--no-home", "--cleanenv"};
    argv.insert(argv.end(), {"--bind", spec.pause_program + ":" + pause_inside + ":ro"});
    for (const auto& device : spec.devices) argv.insert(argv.end(), {"--bind", device + ":" + device});
    for (const auto& mount : spec.mounts) argv.insert(argv.end(), {"--bind", format_mount(mount)});
    for (const auto& mount : spec.system_mounts) argv.insert(argv.end(), {"--bind", format_mount(mount)});
    argv.insert(argv.end(), {spec.image.path, pause_inside});
    return argv;
}

void stop_apptainer(pid_t apptainer) {
    ::kill(-apptainer, SIGKILL);
    ::kill(apptainer, SIGKILL);
    while (::waitpid(apptainer, nullptr, 0) < 0 && errno == EINTR) {
    }
}

pid_t enter_sif_container(const ContainerSpec& spec) {
    struct stat pause {};
    if (::stat(spec.pause_program.c_str(), &pause) != 0)
        throw ContainerError("trellis-pause is missing at " + spec.pause_program);
    int errors = ::memfd_create("apptainer-errors", MFD_CLOEXEC);
    ChildStdio stdio;
    stdio.err = errors;
    pid_t apptainer = spawn(apptainer_command(spec), stdio);
    auto stop = [&] { stop_apptainer(apptainer); };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    pid_t inside = 0;
    while (!(inside = find_pause(apptainer, pause))) {
        int status = 0;
        if (::waitpid(apptainer, &status, WNOHANG) == apptainer) {
            std::string message = read_message(errors);
            throw ContainerError(spec.apptainer + " stopped before the container ran: " +
                                 (message.empty() ? "no message" : message));
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
    if (failure.empty() && find_pause(apptainer, pause) != inside) failure = "the container's process ended while it was joined";
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
