#include "agent/container/oci_runtime.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace trellis::agent {

namespace {

nlohmann::json bind_mount(const std::string& source, const std::string& destination, bool read_only,
                           bool device = false) {
    nlohmann::json options = {"rbind", "nosuid"};
    if (!device) options.push_back("nodev");
    if (read_only) options.push_back("ro");
    return {{"destination", destination}, {"type", "bind"}, {"source", source}, {"options", options}};
}

}  // namespace

nlohmann::json oci_config(const ContainerSpec& spec) {
    nlohmann::json mounts = nlohmann::json::array({
        {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
        {{"destination", "/dev"}, {"type", "tmpfs"}, {"source", "tmpfs"},
         {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
        {{"destination", "/dev/pts"}, {"type", "devpts"}, {"source", "devpts"},
         {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
        // Ranks share memory through /dev/shm (NCCL, data loaders): the kernel's default size
        // (half the memory), not Docker's 64 MB.
        {{"destination", "/dev/shm"}, {"type", "tmpfs"}, {"source", "shm"}, {"options", {"nosuid", "nodev", "mode=1777"}}},
        {{"destination", "/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"nosuid", "nodev", "mode=1777"}}},
    });
    // NCCL and hwloc read the topology from /sys; runc itself makes /dev/null and the other
    // standard device files.
    mounts.push_back(bind_mount("/sys", "/sys", true));
    for (const char* file : {"/etc/hosts", "/etc/resolv.conf"}) mounts.push_back(bind_mount(file, file, true));
    // The idle first process lives on /dev's tmpfs, so that nothing is created in the image.
    mounts.push_back(bind_mount(spec.pause_program, "/dev/.trellis-pause", true));
    for (const auto& device : spec.devices) mounts.push_back(bind_mount(device, device, false, true));
    for (const auto& mount : spec.mounts) mounts.push_back(bind_mount(mount.source, mount.destination, mount.read_only));

    nlohmann::json namespaces = nlohmann::json::array();
    for (const auto& ns : spec.namespaces) namespaces.push_back({{"type", ns}});
    nlohmann::json no_capabilities = {{"bounding", nlohmann::json::array()},
                                      {"effective", nlohmann::json::array()},
                                      {"permitted", nlohmann::json::array()},
                                      {"inheritable", nlohmann::json::array()},
                                      {"ambient", nlohmann::json::array()}};
    nlohmann::json config = {
        {"ociVersion", "1.0.2"},
        {"process",
         {{"terminal", false},
          {"user", {{"uid", spec.user.uid}, {"gid", spec.user.gid}}},
          {"args", {"/dev/.trellis-pause"}},
          {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
          {"cwd", "/"},
          {"capabilities", no_capabilities},
          {"noNewPrivileges", true}}},
        {"root", {{"path", spec.image + "/rootfs"}, {"readonly", true}}},
        {"mounts", mounts},
        {"linux",
         {{"namespaces", namespaces},
          // Only the first process lives in the container's cgroup: the standard device files
          // are what it (and runc's setup) may open.
          {"resources", {{"devices", {{{"allow", false}, {"access", "rwm"}}}}}},
          // Absolute: relative to the caller's (slurmstepd's) cgroup, runc's default, it would
          // sit inside the step's cgroup and could hold up Slurm's cleanup of it.
          {"cgroupsPath", "/trellis/" + spec.id},
          {"maskedPaths", {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/sys/firmware"}},
          {"readonlyPaths", {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}},
    };
    // A host name of its own only with a UTS namespace of its own.
    if (std::find(spec.namespaces.begin(), spec.namespaces.end(), "uts") != spec.namespaces.end())
        config["hostname"] = spec.id;
    return config;
}

namespace {

// The user's mount sources, pinned: each checked path opened without following any link (it
// had none when it was checked), then, once runc has mounted them, compared with what the
// container shows at each destination. A user who swaps a folder of the path for a link in
// between gets an error and no container, not a mount of whatever root can reach.
class PinnedSources {
public:
    explicit PinnedSources(const std::vector<Mount>& mounts) {
        for (const auto& mount : mounts) {
            open_how how{};
            how.flags = O_PATH | O_CLOEXEC;
            how.resolve = RESOLVE_NO_SYMLINKS;
            int fd = int(::syscall(SYS_openat2, AT_FDCWD, mount.source.c_str(), &how, sizeof how));
            if (fd < 0)
                throw RuntimeError("mount source " + mount.source + " changed since it was checked (" +
                                   std::strerror(errno) + ")");
            pinned_.push_back({fd, mount});
        }
    }
    ~PinnedSources() {
        for (auto& [fd, mount] : pinned_) ::close(fd);
    }
    PinnedSources(const PinnedSources&) = delete;
    PinnedSources& operator=(const PinnedSources&) = delete;

    // Throws RuntimeError naming the first mount whose source is not the pinned one.
    void verify(pid_t container) const {
        for (const auto& [fd, mount] : pinned_) {
            struct stat expected {}, seen {};
            auto inside = "/proc/" + std::to_string(container) + "/root" + mount.destination;
            if (::fstat(fd, &expected) != 0 || ::stat(inside.c_str(), &seen) != 0 || expected.st_dev != seen.st_dev ||
                expected.st_ino != seen.st_ino)
                throw RuntimeError("mount source " + mount.source + " changed while the container was made");
        }
    }

private:
    std::vector<std::pair<int, Mount>> pinned_;
};

// runc gives a tmpfs the mode of the image's folder beneath it (0755 in many images), so the
// container's private /tmp would not be writable. It is set to 1777 here, through the first
// process's root, before any of the user's tasks has joined: only the idle first process runs
// there yet, and the folder is the tmpfs runc has just mounted (checked), not the image's.
void open_tmp(pid_t container) {
    int root = ::open(("/proc/" + std::to_string(container) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) throw RuntimeError("cannot reach the container's root: " + std::string(std::strerror(errno)));
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int tmp = int(::syscall(SYS_openat2, root, "tmp", &how, sizeof how));
    ::close(root);
    if (tmp < 0) throw RuntimeError("cannot open the container's /tmp: " + std::string(std::strerror(errno)));
    struct statfs fs {};
    struct stat info {};
    bool fresh = ::fstatfs(tmp, &fs) == 0 && fs.f_type == TMPFS_MAGIC && ::fstat(tmp, &info) == 0 && info.st_uid == 0;
    int status = fresh ? ::fchmod(tmp, 01777) : -1;
    int error = errno;
    ::close(tmp);
    if (!fresh) throw RuntimeError("the container's /tmp is not the root-owned tmpfs the agent asked for");
    if (status != 0) throw RuntimeError("cannot make the container's /tmp writable: " + std::string(std::strerror(error)));
}

}  // namespace

pid_t OciRuntime::start(const ContainerSpec& spec, const std::filesystem::path& state) {
    PinnedSources sources(spec.mounts);
    std::ofstream(state / "config.json") << oci_config(spec).dump(2) << "\n";
    auto pid_file = state / "container.pid";
    auto result = run_command({"runc", "run", "--detach", "--bundle", state.string(), "--pid-file",
                               pid_file.string(), spec.id});
    if (!result.ok()) throw RuntimeError(result.describe("runc run " + spec.id));
    pid_t pid = 0;
    std::ifstream(pid_file) >> pid;
    if (pid <= 0) throw RuntimeError("runc run " + spec.id + ": no pid in " + pid_file.string());
    try {
        sources.verify(pid);
        // A user's own mount at /tmp is theirs as it is: root changes nothing of it.
        if (std::none_of(spec.mounts.begin(), spec.mounts.end(), [](const Mount& m) {
                auto destination = std::filesystem::path(m.destination).lexically_normal();
                return destination == "/tmp" || destination == "/tmp/";
            }))
            open_tmp(pid);
    } catch (...) {
        stop(spec.id, spec.user, state);
        throw;
    }
    return pid;
}

void OciRuntime::stop(const std::string& id, const Identity&, const std::filesystem::path&) {
    // --force kills a running container first; a missing one is not an error here.
    auto result = run_command({"runc", "delete", "--force", id});
    if (!result.ok() && result.errors.find("does not exist") == std::string::npos &&
        result.errors.find("not exist") == std::string::npos)
        throw RuntimeError(result.describe("runc delete " + id));
}

}  // namespace trellis::agent
