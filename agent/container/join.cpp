#include "agent/container/join.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace trellis::agent {

void join_container(pid_t pid, const std::vector<std::string>& namespaces, const std::string& cwd) {
    static const std::map<std::string, std::pair<const char*, int>> kinds = {
        {"mount", {"mnt", CLONE_NEWNS}}, {"ipc", {"ipc", CLONE_NEWIPC}}, {"uts", {"uts", CLONE_NEWUTS}}};
    // All opened first: after joining the mount namespace, /proc may be another one.
    std::vector<std::pair<int, std::string>> opened;
    for (const auto& name : namespaces) {
        auto kind = kinds.find(name);
        if (kind == kinds.end()) throw std::invalid_argument("cannot join namespace '" + name + "'");
        auto path = "/proc/" + std::to_string(pid) + "/ns/" + kind->second.first;
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            for (auto& [other, _] : opened) ::close(other);
            throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno) +
                                     " (has the container stopped?)");
        }
        opened.emplace_back(fd, name);
    }
    for (auto& [fd, name] : opened) {
        int status = ::setns(fd, kinds.at(name).second);
        int error = errno;
        ::close(fd);
        if (status != 0)
            throw std::runtime_error("cannot join the container's " + name + " namespace: " + std::strerror(error));
    }
    // The step's folder when the image has it (usually through a mount), else the root.
    if (cwd.empty() || ::chdir(cwd.c_str()) != 0)
        if (::chdir("/") != 0) throw std::runtime_error(std::string("chdir /: ") + std::strerror(errno));
}

}  // namespace trellis::agent
