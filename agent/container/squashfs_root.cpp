// SPDX-License-Identifier: Apache-2.0
#include "agent/container/squashfs_root.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "agent/command.hpp"
#include "agent/container/rootfs.hpp"
#include "agent/files.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) { throw ContainerError(what + ": " + std::strerror(errno)); }

// "/data" holds "/data" and "/data/x", not "/database".
bool at_or_under(const std::string& path, const std::string& folder) {
    return folder == "/" || path == folder || (path.starts_with(folder) && path[folder.size()] == '/');
}

// Starts `argv` (its last argument /dev/fd/FUSE) to serve the mount, in the foreground: it
// dies with this process, and keeps nothing of this one's but stderr and the descriptors it
// is given, in a mount namespace of its own, a copy of this one as it is now: the container's
// pivot_root must not move the daemon's root onto the mount it serves itself.
pid_t start_daemon(std::vector<std::string> argv, const char* key, int fuse, int archive = -1) {
    if (argv[0].empty() || argv[0][0] != '/' || ::access(argv[0].c_str(), X_OK) != 0)
        throw ContainerError("cannot run " + std::string(key) + " '" + argv[0] + "': " +
                             (argv[0].empty() || argv[0][0] != '/' ? "not an absolute path" : std::strerror(errno)) +
                             " (it serves squashfs images: install the squashfuse and fuse-overlayfs packages, or set "
                             "[container] " +
                             key + " in trellis.toml to its absolute path)");
    Command daemon;
    daemon.argv = std::move(argv);
    daemon.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    daemon.stdio.err = 2;
    daemon.keep = {fuse};
    if (archive >= 0) daemon.keep.push_back(archive);
    daemon.die_with_parent = true;
    daemon.own_session = false;
    daemon.setup = [path = daemon.argv[0]] {
        if (::unshare(CLONE_NEWNS) == 0) return true;
        std::fprintf(stderr, "cannot give %s a mount namespace: %s\n", path.c_str(), std::strerror(errno));
        return false;
    };
    pid_t pid;
    try {
        pid = start(daemon);
    } catch (const std::runtime_error& error) {
        ::close(fuse);
        throw ContainerError(error.what());
    }
    ::close(fuse);
    return pid;
}

// The mount answers once its daemon has started: a daemon that failed is reported now.
void await_daemon(pid_t daemon, const std::string& mounted, const std::string& what) {
    for (int tries = 0; tries < 3000; ++tries) {
        int status = 0;
        if (::waitpid(daemon, &status, WNOHANG) == daemon)
            throw ContainerError(what + " stopped before serving the image (status " +
                                 std::to_string(exit_status(status)) + "; its message is above)");
        struct stat info {};
        if (::stat(mounted.c_str(), &info) == 0) return;
        if (errno != ENOTCONN && errno != EINTR) fail("cannot read the image through " + what);
        ::usleep(10000);
    }
    throw ContainerError(what + " did not serve the image within 30 s");
}

}  // namespace

void stop_fuse_daemons(const std::vector<pid_t>& daemons) {
    for (pid_t daemon : daemons) ::kill(daemon, SIGKILL);
    for (pid_t daemon : daemons) wait_for(daemon);
}

namespace {

// The layers live on a tmpfs over the image's own folder, which nothing else is taken from:
// the host's other paths stay visible for the mounts still to come. `mount_lower` puts the
// image, read-only, at the folder's "image" (the folder is covered by then: it works from
// descriptors opened before). With `user_owned`, fuse-overlayfs shows the image's files
// (root's, who is nobody in the container) as the user's, so that every path takes writes
// (into the tmpfs); else the kernel's overlay.
template <typename MountLower>
SquashfsRoot mount_layers(const std::string& image, const std::string& folder, bool user_owned,
                          const std::vector<std::string>& mount_sources, const std::string& fuse_overlayfs,
                          MountLower mount_lower) {
    for (const auto& source : mount_sources)
        if (at_or_under(source, folder))
            throw ContainerError("mount source " + source + " is in the folder of the image " + image +
                                 ", which the container's layers cover (accepted: sources outside " + folder + ")");
    SquashfsRoot made;
    try {
        mount_tmpfs(folder, "mode=700", "cannot mount the tmpfs for the image's layers over " + folder);
        for (const char* part : {"image", "upper", "work", "root"})
            if (::mkdir((folder + "/" + part).c_str(), 0755) != 0) fail("cannot make the image's layers");
        std::string lower = folder + "/image", root = folder + "/root";
        mount_lower(lower, made);
        std::string layers = "lowerdir=" + lower + ",upperdir=" + folder + "/upper,workdir=" + folder + "/work";
        if (user_owned) {
            int over = mount_fuse(image, root, "fuse-overlayfs", false);
            made.fuse_daemons.push_back(start_daemon({fuse_overlayfs, "-f", "-o",
                                                      layers + ",squash_to_uid=" + std::to_string(::getuid()) +
                                                          ",squash_to_gid=" + std::to_string(::getgid()),
                                                      "/dev/fd/" + std::to_string(over)},
                                                     "fuse_overlayfs", over));
            await_daemon(made.fuse_daemons.back(), root + "/.", "fuse-overlayfs");
        } else {
            mount_overlay(root, layers + ",userxattr", "cannot mount the overlay over the image");
        }
        made.root = root;
    } catch (...) {
        stop_fuse_daemons(made.fuse_daemons);
        throw;
    }
    return made;
}

}  // namespace

SquashfsRoot mount_squashfs_root(const std::string& image, int opened, bool user_owned,
                                 const std::vector<std::string>& mount_sources, const FusePrograms& programs) {
    // Inherited by squashfuse alone: the descriptor the check opened, else the path.
    int archive = opened >= 0 ? ::fcntl(opened, F_DUPFD, 4) : above_helper_stdio(::open(image.c_str(), O_RDONLY));
    if (archive < 0) fail("cannot open the image " + image);
    try {
        auto made = mount_layers(image, fs::path(image).parent_path().string(), user_owned, mount_sources,
                                 programs.fuse_overlayfs, [&](const std::string& lower, SquashfsRoot& made) {
                                     int fuse = mount_fuse(image, lower, "squashfuse", true);
                                     // squashfuse reads the image by /dev/fd: its folder is covered.
                                     made.fuse_daemons.push_back(
                                         start_daemon({programs.squashfuse, "-f", "/dev/fd/" + std::to_string(archive),
                                                       "/dev/fd/" + std::to_string(fuse)},
                                                      "squashfuse", fuse, archive));
                                     await_daemon(made.fuse_daemons.back(), lower + "/.", "squashfuse");
                                 });
        ::close(archive);
        return made;
    } catch (...) {
        ::close(archive);
        throw;
    }
}

SquashfsRoot mount_bundle_layers(const std::string& bundle, const std::vector<std::string>& mount_sources,
                                 const FusePrograms& programs) {
    int rootfs = ::open((bundle + "/rootfs").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfs < 0) fail("cannot open the image " + bundle + "/rootfs");
    try {
        auto made = mount_layers(bundle, bundle, true, mount_sources, programs.fuse_overlayfs,
                                 [&](const std::string& lower, SquashfsRoot&) {
                                     bind_read_only("/proc/self/fd/" + std::to_string(rootfs), lower,
                                                    "cannot bind the image " + bundle + "/rootfs under its layers");
                                 });
        ::close(rootfs);
        return made;
    } catch (...) {
        ::close(rootfs);
        throw;
    }
}

}  // namespace trellis::agent
