// The step's container: checked in srun (the image and mounts against trellis.toml), created
// once per node by the first task that asks (`trellis-agent prepare`, locked and idempotent),
// joined by every task in task_init_privileged so that its exec finds the command in the
// image, given PMIx's settings in task_init, and released when slurmstepd ends the step.
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <slurm/slurm.h>

#include "agent/command.hpp"
#include "agent/container/devices.hpp"
#include "agent/container/image_policy.hpp"
#include "agent/container/join.hpp"
#include "agent/container/step_container.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"

namespace trellis::spank {
namespace {

bool wants_container() { return !state().choices.image.empty(); }

// Only the tasks of srun steps: not the batch script, not the external step.
bool container_step(spank_t sp, std::uint32_t& job, std::uint32_t& step) {
    return spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
           spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS && step != SLURM_BATCH_SCRIPT &&
           step != SLURM_EXTERN_CONT;
}

// PMIxCliTmpDirBase from mpi.conf beside slurm.conf, where clients' folders are made. Not
// from the job's environment: that is the user's to set, and root mounts what this names.
std::string pmix_client_base() {
    if (const char* base = std::getenv("SLURM_PMIX_TMPDIR"); base && *base) return base;  // slurmstepd's own
    const char* conf = std::getenv("SLURM_CONF");
    auto mpi_conf = std::filesystem::path(conf && *conf ? conf : "/etc/slurm/slurm.conf").parent_path() / "mpi.conf";
    std::ifstream in(mpi_conf);
    for (std::string line; std::getline(in, line);)
        if (line.rfind("PMIxCliTmpDirBase=", 0) == 0) return line.substr(std::strlen("PMIxCliTmpDirBase="));
    return "/tmp";
}

// A folder Slurm made for this step: a real folder (not a link), owned by `owner`.
bool slurm_folder(const std::filesystem::path& path, uid_t owner) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == owner &&
           path.string().find_first_of(",:") == std::string::npos;
}

// The PMIx server's folder (slurmstepd's PMIX_SERVER_TMPDIR) and the step's client folder
// (spmix_appdir_UID_JOB.STEP), mounted at the same paths: clients inside find the server.
std::vector<std::string> pmix_mounts(uid_t uid, std::uint32_t job, std::uint32_t step) {
    std::vector<std::string> mounts;
    namespace fs = std::filesystem;
    if (const char* server = std::getenv("PMIX_SERVER_TMPDIR"); server && *server) {
        auto folder = fs::path(server).lexically_normal();
        if (folder.has_filename() == false) folder = folder.parent_path();
        if (slurm_folder(folder, uid) || slurm_folder(folder, 0)) mounts.push_back(folder.string());
    }
    auto client = fs::path(pmix_client_base()).lexically_normal() /
                  ("spmix_appdir_" + std::to_string(uid) + "_" + std::to_string(job) + "." + std::to_string(step));
    if (slurm_folder(client, uid)) mounts.push_back(client.string());
    return mounts;
}

}  // namespace

int check_container_request() {
    const PluginState& s = state();
    if (!wants_container()) {
        if (!s.choices.mounts.empty()) {
            log_error("--trellis-mounts needs --trellis-image: there is no container to mount into");
            return -1;
        }
        return 0;
    }
    try {
        agent::check_image(s.choices.image, s.config.container);
        agent::check_mounts(agent::parse_mounts(s.choices.mounts), s.config.container);
    } catch (const std::exception& e) {
        log_error(std::string("container refused: ") + e.what());
        return -1;
    }
    return 0;
}

int enter_container(spank_t sp) {
    PluginState& s = state();
    std::uint32_t job = 0, step = 0;
    if (!wants_container() || !s.held_error.empty() || !container_step(sp, job, step)) return 0;
    uid_t uid = 0;
    gid_t gid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
        log_error("container: cannot get the job's user from Slurm");
        return -1;
    }
    std::vector<std::string> argv = {s.config.container.agent,
                                     "prepare",
                                     "--id",
                                     agent::step_container_id(node_name(), job, step),
                                     "--image",
                                     s.choices.image,
                                     "--uid",
                                     std::to_string(uid),
                                     "--gid",
                                     std::to_string(gid),
                                     "--owner",
                                     std::to_string(getppid())};  // slurmstepd
    if (!s.config.path.empty()) argv.insert(argv.end(), {"--config", s.config.path});
    if (!s.choices.mounts.empty()) argv.insert(argv.end(), {"--mounts", s.choices.mounts});
    for (const auto& folder : pmix_mounts(uid, job, step)) argv.insert(argv.end(), {"--system-mount", folder});
    if (s.plan)
        for (const auto& device : agent::plan_device_files(*s.plan)) argv.insert(argv.end(), {"--device", device});
    try {
        auto result = agent::run_command(argv, std::nullopt, std::chrono::seconds(150));
        if (!result.ok()) {
            // The agent's message already says what was refused or failed.
            std::string message = result.errors.empty() ? result.describe("trellis-agent prepare") : result.errors;
            while (!message.empty() && message.back() == '\n') message.pop_back();
            log_error("container: " + message);
            return -1;
        }
        pid_t pid = std::atoi(result.output.c_str());
        char cwd[4096] = {};
        if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
        agent::join_container(pid, s.config.container.namespaces, cwd);
        // Inside an image the user chose, setuid programs must not give root back.
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    } catch (const std::exception& e) {
        log_error(std::string("container: ") + e.what());
        return -1;
    }
    return 0;
}

int set_container_environment(spank_t sp) {
    if (!wants_container()) return 0;
    // PMIx inside the image may be built with other defaults: name the components the
    // server uses, as Slurm's own variables report them.
    for (const auto& [from, to] : {std::pair{"PMIX_PTL_MODULE", "PMIX_MCA_ptl"},
                                   std::pair{"PMIX_SECURITY_MODE", "PMIX_MCA_psec"},
                                   std::pair{"PMIX_GDS_MODULE", "PMIX_MCA_gds"}}) {
        auto value = job_env(sp, from);
        if (!value.empty()) spank_setenv(sp, to, value.c_str(), 0);
    }
    spank_setenv(sp, "TRELLIS_IMAGE", state().choices.image.c_str(), 1);
    return 0;
}

int release_container(spank_t sp) {
    std::uint32_t job = 0, step = 0;
    if (!wants_container() || !container_step(sp, job, step)) return 0;
    // Detached: Slurm may still be signalling the step's processes, this one's children too.
    std::vector<std::string> argv = {state().config.container.agent, "release", "--detach", "--id",
                                     agent::step_container_id(node_name(), job, step)};
    if (!state().config.path.empty()) argv.insert(argv.end(), {"--config", state().config.path});
    try {
        auto result = agent::run_command(argv);
        if (!result.ok()) log_error("container: " + result.describe("trellis-agent release"));
    } catch (const std::exception& e) {
        log_error(std::string("container: ") + e.what());
    }
    return 0;
}

}  // namespace trellis::spank
