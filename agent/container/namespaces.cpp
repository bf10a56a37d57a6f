// SPDX-License-Identifier: Apache-2.0
#include "agent/container/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/container/container_spec.hpp"

namespace trellis::agent {

namespace {

bool write_proc(const char* path, const std::string& text) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    int error = errno;
    ::close(fd);
    errno = error;
    return ok;
}

}  // namespace

bool enter_user_namespace(int more, bool as_root) {
    std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
    return ::unshare(CLONE_NEWUSER | more) == 0 && write_proc("/proc/self/setgroups", "deny") &&
           write_proc("/proc/self/uid_map", (as_root ? "0" : uid) + " " + uid + " 1\n") &&
           write_proc("/proc/self/gid_map", (as_root ? "0" : gid) + " " + gid + " 1\n");
}

namespace {

struct Kind {
    const char* proc;  // its name under /proc/PID/ns
    int flag;
};
const Kind kinds[] = {{"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS}};

}  // namespace

const char* namespace_name(int kind) {
    return kind == CLONE_NEWUSER ? "user" : kind == CLONE_NEWNS ? "mount" : kind == CLONE_NEWIPC ? "ipc" : "uts";
}

std::vector<std::pair<int, int>> open_namespaces(pid_t pid) {
    std::vector<std::pair<int, int>> opened;
    for (const Kind& kind : kinds) {
        int fd = ::open(("/proc/" + std::to_string(pid) + "/ns/" + kind.proc).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            int error = errno;
            for (auto [other, _] : opened) ::close(other);
            throw ContainerError(std::string("cannot open the container's ") + namespace_name(kind.flag) +
                                 " namespace: " + std::strerror(error));
        }
        struct stat theirs {
        }, ours{};
        bool same = ::fstat(fd, &theirs) == 0 &&
                    ::stat((std::string("/proc/self/ns/") + kind.proc).c_str(), &ours) == 0 &&
                    theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev;
        if (same)
            ::close(fd);
        else
            opened.emplace_back(fd, kind.flag);
    }
    return opened;
}

}  // namespace trellis::agent
