// SPDX-License-Identifier: Apache-2.0
// The unprivileged half of cdi_apply_test.sh: as the job's user, reads the CDI specs of a
// root-owned folder, selects GPU 0, makes a user and mount namespace of its own (mapping only
// its uid and gid, as trellis containers do), mounts a tmpfs root, applies the edits through
// the container's Rootfs and checks what a task would see. Prints "ok: ..." or "FAIL: ..." lines and
// exits 1 on any failure.
//   cdi_apply_probe apply SPEC_DIR ROOT       the full check
//   cdi_apply_probe refuse SPEC_DIR ROOT TEXT  expects a refusal whose message contains TEXT
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "agent/container/cdi/apply.hpp"
#include "agent/container/cdi/selection.hpp"
#include "agent/container/cdi/spec_folders.hpp"
#include "agent/container/rootfs.hpp"

using namespace trellis::agent::cdi;

namespace {

int failures = 0;
void check(bool ok, const std::string& what, const std::string& detail = "") {
    std::cout << (ok ? "ok: " : "FAIL: ") << what << (ok || detail.empty() ? "" : " (" + detail + ")") << "\n";
    failures += ok ? 0 : 1;
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

// A user namespace mapping only this user, and a private mount namespace in it: the
// container maker's position, with the capabilities it holds there until it executes a task.
void enter_namespaces(const std::string& root) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        throw std::runtime_error(std::string("unshare: ") + std::strerror(errno));
    write_file("/proc/self/setgroups", "deny");
    write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
    write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        throw std::runtime_error(std::string("making / private: ") + std::strerror(errno));
    if (mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID, "mode=0755") != 0)
        throw std::runtime_error("tmpfs on " + root + ": " + std::strerror(errno));
}

std::string run(const std::string& command) {
    std::string out;
    if (FILE* pipe = popen((command + " 2>&1").c_str(), "r")) {
        char buffer[512];
        while (fgets(buffer, sizeof buffer, pipe)) out += buffer;
        pclose(pipe);
    }
    return out;
}

std::string link_of(const std::string& path) {
    char target[4096];
    ssize_t n = readlink(path.c_str(), target, sizeof target);
    return n < 0 ? std::string("(") + std::strerror(errno) + ")" : std::string(target, static_cast<std::size_t>(n));
}

ResolvedEdits select_and_resolve(const std::string& spec_dir) {
    auto specs = load_specs({spec_dir});
    auto devices = step_gpu_devices(specs, {{0, ""}});
    return resolve_edits(specs, devices, {});
}

int apply(const std::string& spec_dir, const std::string& root) {
    auto edits = select_and_resolve(spec_dir);
    check(edits.devices == std::vector<std::string>{"nvidia.com/gpu=0"}, "GPU 0 selects nvidia.com/gpu=0");
    enter_namespaces(root);
    // An image's absolute symbolic link: followed inside the root, never to the host's /usr/lib.
    if (::symlink("/usr/lib", (root + "/lib64").c_str()) != 0) throw std::runtime_error("symlink lib64");
    trellis::agent::Rootfs editor(root, true, false);
    apply_edits(edits, editor);
    for (const auto& note : edits.notes) std::cout << "note: " << note << "\n";

    int fd = open((root + "/dev/nvidia0").c_str(), O_RDONLY);
    int open_errno = errno;
    if (fd >= 0) close(fd);
    check(fd < 0 && open_errno == ENXIO, "opening /dev/nvidia0 reaches the (absent) driver: ENXIO, not EACCES",
          fd >= 0 ? "it opened" : std::strerror(open_errno));
    auto cat = run("cat " + root + "/dev/nvidia0");
    check(cat.find("No such device or address") != std::string::npos, "cat /dev/nvidia0 says No such device or address",
          cat);
    struct stat st;
    check(stat((root + "/dev/nvidiactl").c_str(), &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 195 &&
              minor(st.st_rdev) == 255,
          "/dev/nvidiactl (195:255) is bound from the host");
    check(lstat((root + "/dev/nvidia1").c_str(), &st) != 0 && errno == ENOENT,
          "/dev/nvidia1 (not the step's) is absent");

    std::string lib = root + "/usr/lib/x86_64-linux-gnu";
    check(link_of(lib + "/libcuda.so.1") == "libcuda.so.999.99",
          "create-symlinks made libcuda.so.1 -> libcuda.so.999.99", link_of(lib + "/libcuda.so.1"));
    check(link_of(lib + "/libcuda.so") == "libcuda.so.1", "create-symlinks made libcuda.so -> libcuda.so.1");
    check(link_of(lib + "/libcuda-through-link.so") == "libcuda.so.1",
          "a link made through the image's absolute /lib64 -> /usr/lib lands inside the root");
    struct statvfs vfs {};
    check(statvfs((lib + "/libcuda.so.999.99").c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) &&
              (vfs.f_flag & ST_NOSUID) && (vfs.f_flag & ST_NODEV),
          "the driver library is bound read-only, nosuid, nodev");
    check(statvfs((root + "/dev/nvidia0").c_str(), &vfs) == 0 && !(vfs.f_flag & ST_NODEV) && (vfs.f_flag & ST_NOSUID),
          "the device node is bound nosuid, without nodev");
    auto cache = run("/sbin/ldconfig -p -C " + root + "/etc/ld.so.cache");
    check(cache.find("libcuda.so.1 (libc6,x86-64") != std::string::npos &&
              cache.find("=> /usr/lib/x86_64-linux-gnu/libcuda.so.1") != std::string::npos,
          "ldconfig -p -C ROOT/etc/ld.so.cache lists libcuda.so.1 at its container path", cache);
    std::ifstream conf(root + "/etc/ld.so.conf.d/00-trellis-cdi.conf");
    std::string conf_text((std::istreambuf_iterator<char>(conf)), std::istreambuf_iterator<char>());
    check(conf_text.find("/usr/lib/x86_64-linux-gnu\n") != std::string::npos,
          "update-ldcache's folder is in ld.so.conf.d");
    bool void_env = false;
    for (const auto& entry : edits.env) void_env = void_env || entry == "NVIDIA_VISIBLE_DEVICES=void";
    check(void_env, "the environment gets NVIDIA_VISIBLE_DEVICES=void");
    check(edits.notes.size() == 2, "enable-cuda-compat and disable-device-node-modification are skipped with notes");
    return failures ? 1 : 0;
}

int refuse(const std::string& spec_dir, const std::string& root, const std::string& expected) {
    try {
        auto edits = select_and_resolve(spec_dir);
        enter_namespaces(root);
        trellis::agent::Rootfs editor(root, true, false);
        apply_edits(edits, editor);
        check(false, "refused: " + expected, "it was applied");
    } catch (const std::exception& error) {
        std::string message = error.what();
        check(message.find(expected) != std::string::npos, "refused: " + message, "expected: " + expected);
    }
    return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "apply" && argc == 4) return apply(argv[2], argv[3]);
        if (mode == "refuse" && argc == 5) return refuse(argv[2], argv[3], argv[4]);
        std::cerr << "usage: cdi_apply_probe apply SPEC_DIR ROOT | refuse SPEC_DIR ROOT TEXT\n";
        return 2;
    } catch (const std::exception& error) {
        std::cout << "FAIL: " << error.what() << "\n";
        return 1;
    }
}
