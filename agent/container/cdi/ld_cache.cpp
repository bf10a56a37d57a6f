#include "agent/container/cdi/ld_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace trellis::agent::cdi {

void build_ld_cache(const std::string& root, const std::vector<std::string>& folders, const std::string& ldconfig) {
    int program = open(ldconfig.c_str(), O_RDONLY | O_CLOEXEC);
    if (program < 0) throw Error("cannot open " + ldconfig + " to build the container's ld.so.cache: " + std::strerror(errno));
    struct stat st;
    bool has_conf = stat((root + "/etc/ld.so.conf").c_str(), &st) == 0;
    // ldconfig -f CONF DIR...: the folders are scanned besides the configured ones.
    std::vector<std::string> args = {"ldconfig", "-f", has_conf ? "/etc/ld.so.conf" : ld_conf_file};
    args.insert(args.end(), folders.begin(), folders.end());
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    char* envp[] = {nullptr};
    int output[2];
    if (pipe2(output, O_CLOEXEC) != 0) {
        close(program);
        throw Error(std::string("pipe: ") + std::strerror(errno));
    }
    pid_t child = fork();
    if (child == 0) {
        dup2(output[1], 1);
        dup2(output[1], 2);
        if (chroot(root.c_str()) != 0 || chdir("/") != 0) {
            dprintf(2, "chroot %s: %s (the container's maker needs CAP_SYS_CHROOT in its user namespace)\n",
                    root.c_str(), std::strerror(errno));
            _exit(126);
        }
        fexecve(program, argv.data(), envp);
        dprintf(2, "exec %s: %s\n", ldconfig.c_str(), std::strerror(errno));
        _exit(127);
    }
    close(output[1]);
    close(program);
    std::string messages;
    char buffer[4096];
    for (ssize_t n; (n = read(output[0], buffer, sizeof buffer)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if (messages.size() < 16384) messages.append(buffer, static_cast<std::size_t>(n));
    }
    close(output[0]);
    if (child < 0) throw Error(std::string("fork for ldconfig: ") + std::strerror(errno));
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Error("building the container's ld.so.cache (" + ldconfig + " in " + root + ") failed with status " +
                    std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) + ": " + messages);
}

}  // namespace trellis::agent::cdi
