// SPDX-License-Identifier: Apache-2.0
#include "agent/container/ld_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "agent/command.hpp"
#include "agent/files.hpp"
#include "common/error.hpp"

namespace trellis::agent {

void build_ld_cache(const std::string& root, const std::vector<std::string>& folders, const std::string& conf,
                    const std::string& ldconfig) {
    Fd program(::open(ldconfig.c_str(), O_RDONLY | O_CLOEXEC));
    if (!program)
        throw Error("cannot open " + ldconfig + " to build the container's ld.so.cache: " + std::strerror(errno));
    struct stat st {};
    bool has_conf = ::stat((root + "/etc/ld.so.conf").c_str(), &st) == 0;
    Command command;
    // ldconfig -f CONF DIR...: the folders are scanned besides the configured ones.
    command.argv = {"ldconfig", "-f", has_conf ? "/etc/ld.so.conf" : conf};
    command.argv.insert(command.argv.end(), folders.begin(), folders.end());
    command.program = program.get();
    command.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};  // nothing of the user's
    command.own_session = false;
    command.setup = [&root] {
        if (::chroot(root.c_str()) == 0) return true;
        std::fprintf(stderr, "chroot %s: %s (the container's maker needs CAP_SYS_CHROOT in its user namespace)\n",
                     root.c_str(), std::strerror(errno));
        return false;
    };
    Finished done;
    try {
        done = run(command);
    } catch (const std::runtime_error& error) {
        throw Error("cannot run " + ldconfig + " for the container's ld.so.cache: " + error.what());
    }
    if (done.status != 0)
        throw Error("building the container's ld.so.cache (" + ldconfig + " in " + root + ") failed with status " +
                    std::to_string(done.status) + ": " + done.out + done.err);
}

}  // namespace trellis::agent
