// SPDX-License-Identifier: Apache-2.0
#include "agent/container/step_container.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "agent/container/cdi/step_edits.hpp"
#include "agent/container/devices.hpp"
#include "agent/container/oci_container.hpp"
#include "agent/container/sif_container.hpp"
#include "agent/container/squashfs_root.hpp"
#include "common/error.hpp"

namespace trellis::agent {

std::string pause_program() {
    std::error_code error;
    auto beside = std::filesystem::read_symlink("/proc/self/exe", error).parent_path() / "trellis-pause";
    if (!error && std::filesystem::exists(beside, error)) return beside.string();
    return TRELLIS_PAUSE_PATH;
}

namespace {

// The plugin's own mounts (PMIx's folders, the TaskProlog): existing folders or files that
// are not links, with nothing in their names that a mount list would split; ":ro" at the end
// mounts one read-only.
std::vector<Mount> checked_system_mounts(const std::vector<std::string>& entries) {
    std::vector<Mount> mounts;
    for (const auto& entry : entries) {
        bool read_only = entry.ends_with(":ro");
        std::string path = read_only ? entry.substr(0, entry.size() - 3) : entry;
        struct stat info {};
        if (path.empty() || path[0] != '/' || path.find_first_of(",:") != std::string::npos ||
            ::lstat(path.c_str(), &info) != 0 || !(S_ISDIR(info.st_mode) || S_ISREG(info.st_mode)) ||
            std::filesystem::path(path).lexically_normal() != path)
            throw PolicyError("system mount '" + entry + "' is not a plain, existing folder or file");
        mounts.push_back({path, path, read_only});
    }
    return mounts;
}

}  // namespace

ContainerSpec checked_container_spec(const StepContainerRequest& request, const config::Config& config) {
    ContainerSpec spec;
    spec.image = check_image(request.image, config.container);
    if (spec.image.kind == ImageKind::oci_bundle) check_image_contents(spec.image.path + "/rootfs");
    spec.mounts = check_mounts(parse_mounts(request.user_mounts), config.container);
    spec.system_mounts = checked_system_mounts(request.system_mounts);
    for (const auto& device : request.devices)
        if (!device.starts_with("/dev/") || device.find("..") != std::string::npos ||
            device.find_first_of(",:") != std::string::npos)
            throw UsageError("--device '" + device + "' is not a device file under /dev");
    spec.namespaces = config.container.namespaces;
    spec.apptainer = config.container.apptainer;
    spec.squashfuse = config.container.squashfuse;
    spec.fuse_overlayfs = config.container.fuse_overlayfs;
    spec.pause_program = pause_program();
    spec.writable = request.writable;
    if (!request.gpus.empty() && spec.image.kind != ImageKind::sif) {
        std::vector<cdi::StepGpu> gpus;
        for (int index : request.gpus) gpus.push_back({index, ""});
        auto step = cdi::step_cdi_edits(config.container, gpus);
        spec.cdi = step.edits;
        spec.root_edits = spec.cdi.has_value();
        spec.notes = step.notes;
        if (step.warning) spec.notes.insert(spec.notes.begin(), "warning: " + *step.warning);
    }
    spec.device_nodes = container_device_nodes(request.devices, spec.cdi ? &*spec.cdi : nullptr);
    return spec;
}

std::chrono::seconds prepare_limit(const StepContainerRequest& request) {
    bool imported = request.image.starts_with("docker://") || request.image.starts_with("oci-archive:") ||
                    request.image.starts_with("docker-archive:");
    return imported ? std::chrono::minutes(30) : std::chrono::seconds(60);
}

void ContainerHelpers::stop() const {
    if (apptainer) stop_apptainer(apptainer);
    stop_fuse_daemons(fuse_daemons);
}

ContainerHelpers enter_container(const ContainerSpec& spec) {
    if (::getuid() == 0 || ::geteuid() == 0)
        throw PolicyError(
            "containers are made with the job's user's own rights, never root's: run as that user "
            "(runuser -u USER -- ...)");
    ContainerHelpers helpers;
    if (spec.image.kind == ImageKind::sif)
        helpers.apptainer = enter_sif_container(spec);
    else
        helpers.fuse_daemons = enter_oci_container(spec);
    return helpers;
}

std::vector<std::string> prepare_command(const std::string& agent, const StepContainerRequest& request,
                                         const std::string& config_path) {
    std::vector<std::string> argv = {agent, "prepare", "--image", request.image};
    if (!request.user_mounts.empty()) argv.insert(argv.end(), {"--mounts", request.user_mounts});
    for (const auto& folder : request.system_mounts) argv.insert(argv.end(), {"--system-mount", folder});
    for (const auto& device : request.devices) argv.insert(argv.end(), {"--device", device});
    if (request.writable) argv.push_back("--writable");
    for (int gpu : request.gpus) argv.insert(argv.end(), {"--gpu", std::to_string(gpu)});
    if (!request.auth_file.empty()) argv.insert(argv.end(), {"--auth-file", request.auth_file});
    if (!request.sent.empty()) argv.insert(argv.end(), {"--sent", request.sent});
    if (!config_path.empty()) argv.insert(argv.end(), {"--config", config_path});
    return argv;
}

}  // namespace trellis::agent
