#include "agent/container/container_registry.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out.flush()) throw RuntimeError("cannot write " + path.string());
}

// One lock for the whole run directory, held while a container is looked up, created or
// removed: a few hundred milliseconds per step, and no window between deciding and acting.
// The kernel drops it when the holder dies, so a crash half-way leaves a folder without
// `ready`, redone later. The lock file is never removed, so every caller locks the same one.
class RunDirLock {
public:
    explicit RunDirLock(const fs::path& run_dir) {
        auto path = run_dir / ".lock";
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd_ < 0) throw RuntimeError("cannot open " + path.string() + ": " + std::strerror(errno));
        // Bounded: a stuck holder must not hang every task of the node.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR)
                throw RuntimeError("cannot lock " + path.string() + ": " + std::strerror(errno));
            if (std::chrono::steady_clock::now() > deadline) {
                ::close(fd_);
                throw RuntimeError("another trellis-agent has held " + path.string() + " for 90 s");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    ~RunDirLock() { ::close(fd_); }
    RunDirLock(const RunDirLock&) = delete;
    RunDirLock& operator=(const RunDirLock&) = delete;

private:
    int fd_ = -1;
};

// A zombie owner (killed, not yet reaped: a daemon's parent is init, which may be slow or,
// in a container, absent) counts as dead.
bool owner_alive(const fs::path& folder) {
    auto owner = read_file(folder / "owner");
    pid_t pid = std::atoi(owner.c_str());
    return !owner.empty() && process_running(pid) && process_identity(pid) == owner;
}

// The process to join must be the one the runtime started, not a pid since reused, and its
// namespaces must not sit in a user namespace of the user's own (unprivileged Apptainer):
// root joining those would run inside mounts the user controls.
bool fit_to_join(const fs::path& folder, pid_t pid, uid_t uid) {
    if (!process_running(pid) || process_identity(pid) != read_file(folder / "process")) return false;
    struct stat process {};
    if (::stat(("/proc/" + std::to_string(pid)).c_str(), &process) != 0 || process.st_uid != uid) return false;
    std::error_code error;
    return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/user", error) ==
           fs::read_symlink("/proc/self/ns/user", error);
}

}  // namespace

bool process_running(pid_t pid) {
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' && stat[close + 2] != 'X';
}

std::string process_identity(pid_t pid) {
    // Field 22 of /proc/PID/stat, the start time, follows the command in parentheses.
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (stat.empty() || close == std::string::npos) return "";
    std::stringstream fields(stat.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
    }
    return std::to_string(pid) + " " + field;
}

ContainerRegistry::ContainerRegistry(fs::path run_dir) : run_dir_(std::move(run_dir)) {
    std::error_code error;
    fs::create_directories(run_dir_, error);
    // Root keeps containers' pids here: a folder another user could plant files in, or a
    // link to one, would let that user choose what root joins.
    struct stat info {};
    if (::lstat(run_dir_.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
        throw RuntimeError("the run directory " + run_dir_.string() + " is missing or not a folder");
    if (info.st_uid != ::getuid() || (info.st_mode & (S_IWGRP | S_IWOTH)))
        throw RuntimeError("the run directory " + run_dir_.string() + " must belong to uid " +
                           std::to_string(::getuid()) + " and be writable by it alone");
    ::chmod(run_dir_.c_str(), 0700);
}

pid_t ContainerRegistry::prepare(const ContainerSpec& spec, ContainerRuntime& runtime, pid_t owner) {
    RunDirLock lock(run_dir_);
    sweep_locked();
    auto folder = run_dir_ / spec.id;
    if (fs::exists(folder / "ready")) {
        pid_t pid = std::atoi(read_file(folder / "pid").c_str());
        if (pid > 0 && fit_to_join(folder, pid, spec.user.uid)) return pid;
    }
    // Half made (its maker died) or its process is gone: start afresh.
    if (fs::exists(folder)) remove(spec.id);
    fs::create_directories(folder);
    write_file(folder / "owner", process_identity(owner));
    write_file(folder / "runtime", runtime.name());
    write_file(folder / "user", std::to_string(spec.user.uid) + " " + std::to_string(spec.user.gid));
    pid_t pid = 0;
    try {
        pid = runtime.start(spec, folder);
        write_file(folder / "process", process_identity(pid));
        // A runtime may report success for a container whose first process died at once.
        if (!process_running(pid))
            throw RuntimeError(runtime.name() + ": container " + spec.id + " stopped as soon as it started (pid " +
                               std::to_string(pid) + ")");
        if (!fit_to_join(folder, pid, spec.user.uid))
            throw RuntimeError(runtime.name() + ": the process of container " + spec.id + " (pid " +
                               std::to_string(pid) + ") does not run as uid " + std::to_string(spec.user.uid) +
                               " in this machine's user namespace: it is not joined");
    } catch (...) {
        remove(spec.id);
        throw;
    }
    write_file(folder / "pid", std::to_string(pid));
    write_file(folder / "ready", "");
    return pid;
}

void ContainerRegistry::release(const std::string& id) {
    RunDirLock lock(run_dir_);
    if (fs::exists(run_dir_ / id)) remove(id);
    sweep_locked();
}

void ContainerRegistry::remove(const std::string& id) {
    auto folder = run_dir_ / id;
    auto runtime_name = read_file(folder / "runtime");
    Identity user{0, 0};
    std::istringstream(read_file(folder / "user")) >> user.uid >> user.gid;
    if (!runtime_name.empty()) runtime_named(runtime_name)->stop(id, user, folder);
    fs::remove_all(folder);
}

int ContainerRegistry::sweep() {
    RunDirLock lock(run_dir_);
    return sweep_locked();
}

int ContainerRegistry::sweep_locked() {
    int swept = 0;
    std::error_code error;
    std::vector<std::string> dead;
    for (const auto& entry : fs::directory_iterator(run_dir_, error))
        if (entry.is_directory() && !owner_alive(entry.path())) dead.push_back(entry.path().filename().string());
    for (const auto& id : dead) {
        try {
            remove(id);
            ++swept;
        } catch (const std::exception&) {
            // Left for the next sweep; the caller's own work goes on.
        }
    }
    return swept;
}

}  // namespace trellis::agent
