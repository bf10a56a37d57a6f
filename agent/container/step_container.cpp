#include "agent/container/step_container.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "agent/container/container_registry.hpp"
#include "agent/container/image_policy.hpp"
#include "agent/container/runtime.hpp"

namespace trellis::agent {

std::string step_container_id(const std::string& node, unsigned job, unsigned step) {
    return "trellis-" + node + "-" + std::to_string(job) + "." + std::to_string(step);
}

std::string pause_program() {
    if (const char* path = std::getenv("TRELLIS_PAUSE"); path && *path) return path;
    // Beside the agent in a build tree, else where `make install` put it.
    std::error_code error;
    auto beside = std::filesystem::read_symlink("/proc/self/exe", error).parent_path() / "trellis-pause";
    if (!error && std::filesystem::exists(beside, error)) return beside.string();
    return TRELLIS_PAUSE_PATH;
}

namespace {

// The plugin's own mounts (PMIx's folders): whole, existing folders that are not links, with
// nothing in their names that a mount list would split.
std::vector<Mount> checked_system_mounts(const std::vector<Mount>& mounts) {
    for (const auto& mount : mounts) {
        struct stat info {};
        if (mount.source.find_first_of(",:") != std::string::npos || ::lstat(mount.source.c_str(), &info) != 0 ||
            !S_ISDIR(info.st_mode) || std::filesystem::path(mount.source).lexically_normal() != mount.source)
            throw PolicyError("system mount '" + mount.source + "' is not a plain, existing folder");
    }
    return mounts;
}

}  // namespace

pid_t prepare_step_container(const StepContainerRequest& request, const Config& config) {
    for (char c : request.id)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_')
            throw std::invalid_argument("container id '" + request.id + "': only letters, digits, '-', '.', '_'");
    if (request.id.empty()) throw std::invalid_argument("no container id");
    // The agent joins the container's namespaces, which takes root; without it, run the
    // agent inside the image instead (singularity exec IMAGE trellis-agent launch ...).
    if (::getuid() != 0)
        throw PolicyError("containers need root (the ranks join the container's namespaces): run through the "
                          "plugin (srun --trellis-image) or as root, or run trellis-agent inside the image");
    auto image = check_image(request.image, config.container, request.user);
    ContainerSpec spec;
    spec.id = request.id;
    spec.image = image.path;
    spec.mounts = check_mounts(parse_mounts(request.user_mounts), config.container, request.user);
    auto system = checked_system_mounts(request.system_mounts);
    spec.mounts.insert(spec.mounts.begin(), system.begin(), system.end());
    spec.devices = request.devices;
    spec.namespaces = config.container.namespaces;
    spec.user = request.user;
    spec.pause_program = pause_program();
    auto runtime = make_runtime(config.container.runtime, image.kind);
    ContainerRegistry registry(config.container.run_dir);
    return registry.prepare(spec, *runtime, request.owner);
}

void release_step_container(const std::string& id, const Config& config) {
    ContainerRegistry(config.container.run_dir).release(id);
}

}  // namespace trellis::agent
