// SPDX-License-Identifier: Apache-2.0
// The step's container: checked in srun (the image and mounts against trellis.toml), made
// once per node in user_init by `trellis-agent prepare` running as the job's user and held
// here by its namespaces, joined by every task in task_init, as the user, just before it
// execs. Root never touches it: nothing the user chose is opened, run or joined with root's
// rights. No process of it outlives the step: it is its tasks, in the job's cgroups, and
// slurmstepd's descriptors, which go with slurmstepd, however it ends.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <slurm/slurm.h>

#include "agent/container/cdi/step_edits.hpp"
#include "agent/container/devices.hpp"
#include "agent/image/cache.hpp"
#include "agent/image/policy.hpp"
#include "agent/image/registry_digest.hpp"
#include "agent/image/settings.hpp"
#include "agent/container/step_container.hpp"
#include "common/environment.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"
#include "slurm/slurm_config.hpp"

namespace trellis::spank {
namespace {

// An image was asked for: given, or given and refused on this node (container_error).
bool wants_container() { return !state().choices.image.empty() || !state().container_error.empty(); }

// Only the tasks of srun steps: not the batch script, the external step or salloc's shell.
bool container_step(spank_t sp, std::uint32_t& job, std::uint32_t& step) {
    return spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
           spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS && step != SLURM_BATCH_SCRIPT &&
           step != SLURM_EXTERN_CONT && step != SLURM_INTERACTIVE_STEP;
}

// PMIxCliTmpDirBase from mpi.conf beside slurm.conf, where clients' folders are made. Not
// from the job's environment, which may name anything: this names Slurm's own folders.
std::string pmix_client_base() {
    if (const char* base = std::getenv("SLURM_PMIX_TMPDIR"); base && *base) return base;  // slurmstepd's own
    auto base = slurm::pmix_client_tmpdir_base(slurm::slurm_conf_from_environment());
    return base.empty() ? "/tmp" : base;
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
    // Set below or not at all: an srun inside a task must not hand on its enclosing step's.
    unsetenv(env::image_pinned.name);
    if (!wants_container()) {
        if (!s.choices.mounts.empty() || s.choices.writable || !s.choices.keep_env.empty() || s.choices.entrypoint) {
            log_error(
                "--trellis-mounts, --trellis-writable, --trellis-env and --trellis-entrypoint need "
                "--trellis-image: there is no container for them");
            return -1;
        }
        return 0;
    }
    if (s.choices.entrypoint) {
        // slurmstepd execs the task's command itself, after task_init: a plugin can change its
        // environment, not put arguments before it.
        log_error(
            "--trellis-entrypoint is not offered by srun (slurmstepd execs the command itself, and a plugin "
            "cannot put the Entrypoint before it): call the image's entrypoint in the command, or run "
            "trellis-agent launch --entrypoint --image IMAGE -- CMD in a step without --trellis-image");
        return -1;
    }
    agent::CheckedImage image;
    try {
        image = agent::check_image(s.choices.image, s.config.container);
        agent::check_mounts(agent::parse_mounts(s.choices.mounts), s.config.container);
    } catch (const std::exception& e) {
        log_error(std::string("container refused: ") + e.what());
        return -1;
    }
    // Only once the policy allows it does srun ask the registry (as the user, with the user's
    // own credentials), and once for the whole step: every node runs the same image even if
    // the tag moves while the step starts. slurmstepd takes the pinned reference from srun's
    // environment, which Slurm hands to the step.
    if (image.kind != agent::ImageKind::registry) return 0;
    if (!image.reference.digest.empty()) return stage_image_for_step(image.reference.text());
    std::string pinned;
    try {
        pinned = image.reference.pinned(agent::resolve_digest(image.reference, s.config.container)).text();
        setenv(env::image_pinned.name, pinned.c_str(), 1);
        if (s.choices.verbose) {
            std::string line = "trellis: " + image.reference.text() + " is " + pinned + " (resolved by srun)\n";
            std::fputs(line.c_str(), stderr);
        }
    } catch (const std::exception& e) {
        log_error(std::string("container: ") + e.what());
        return -1;
    }
    return stage_image_for_step(pinned);
}

void take_pinned_image(spank_t sp) {
    PluginState& s = state();
    if (s.choices.image.empty() || !s.container_error.empty()) return;
    agent::ImageReference asked;
    try {
        asked = agent::parse_image_reference(s.choices.image);
    } catch (const std::exception&) {
        return;  // refused with its reason where the option was taken
    }
    if (asked.kind != agent::ReferenceKind::registry || !asked.digest.empty()) return;
    std::string handed = job_env(sp, env::image_pinned.name);
    try {
        auto pinned = agent::parse_image_reference(handed);
        if (pinned.kind == agent::ReferenceKind::registry && !pinned.digest.empty() &&
            pinned.registry_path() == asked.registry_path()) {
            s.image_as_asked = s.choices.image;
            s.choices.image = pinned.text();
            return;
        }
    } catch (const std::exception&) {}
    // Each node would otherwise ask the registry itself, and might run another image.
    s.container_error =
        "container: srun handed no digest for " + asked.text() + " (" + env::image_pinned.name + " is " +
        (handed.empty() ? "unset" : "'" + handed + "'") +
        "; srun's --export must let it through, and srun's trellis must be one that resolves registry tags)";
}

// The step's own cgroups that slurmstepd is not in: on cgroup v1 slurmstepd stays in the
// job's freezer cgroup, while Slurm tracks (proctrack/cgroup: signals, and the pids that
// jobacct_gather accounts) the step's, job_J/step_S. prepare and its FUSE daemons join those,
// as the tasks do. On cgroup v2 slurmstepd is already in the step's (step_S/slurm).
std::vector<std::string> step_cgroups(std::uint32_t job, std::uint32_t step) {
    std::vector<std::string> procs;
    std::ifstream in("/proc/self/cgroup");
    std::string job_level = "/job_" + std::to_string(job);
    for (std::string line; std::getline(in, line);) {
        auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
        if (controllers.empty() || !path.ends_with(job_level)) continue;
        std::string file = "/sys/fs/cgroup/" + controllers + path + "/step_" + std::to_string(step) + "/cgroup.procs";
        if (::access(file.c_str(), F_OK) == 0) procs.push_back(file);
    }
    return procs;
}

void make_image_cache_folder(spank_t sp) {
    PluginState& s = state();
    std::uint32_t job = 0, step = 0;
    if (s.choices.image.empty() || !s.container_error.empty() || !container_step(sp, job, step)) return;
    try {
        if (agent::parse_image_reference(s.choices.image).kind == agent::ReferenceKind::path) return;
    } catch (const std::exception&) {
        return;  // refused with its reason where the option was taken
    }
    uid_t uid = 0;
    gid_t gid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
        s.container_error = "cannot get the job's user from Slurm";
        return;
    }
    // Root makes the user's folder in the node's cache, through descriptors: no user can make
    // or hold another's. The import itself runs as the user in user_init.
    try {
        if (auto note = agent::make_user_cache_folder(s.config.container, uid, gid); !note.empty()) log_info(note);
    } catch (const agent::PolicyError& e) {
        s.container_error = std::string("container refused: ") + e.what();
    } catch (const std::exception& e) {
        s.container_error = std::string("container: ") + e.what();
    }
}

void prepare_container(spank_t sp) {
    PluginState& s = state();
    std::uint32_t job = 0, step = 0;
    if (s.choices.image.empty() || !s.container_error.empty() || !container_step(sp, job, step)) return;
    uid_t uid = 0;
    gid_t gid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
        s.container_error = "cannot get the job's user from Slurm";
        return;
    }
    agent::StepContainerRequest request;
    request.image = s.choices.image;
    request.user_mounts = s.choices.mounts;
    request.writable = s.choices.writable;
    request.system_mounts = pmix_mounts(uid, job, step);
    // Slurm runs the TaskProlog after the task has joined the container, so by its path there.
    std::string prolog = slurm::task_prolog_path(slurm::slurm_conf_from_environment());
    struct stat info {};
    if (!prolog.empty() && ::stat(prolog.c_str(), &info) == 0 && S_ISREG(info.st_mode))
        request.system_mounts.push_back(prolog + ":ro");
    request.auth_file = job_env(sp, "REGISTRY_AUTH_FILE");
    request.sent = std::to_string(job) + "." + std::to_string(step);
    if (s.plan) {
        request.devices = agent::plan_device_files(*s.plan);
        for (const auto& gpu : agent::cdi::plan_step_gpus(*s.plan)) request.gpus.push_back(gpu.index);
    }
    try {
        s.container = agent::HeldContainer::make(
            agent::prepare_command(s.config.container.agent, request, s.config.path),
            agent::Identity{uid, gid, step_cgroups(job, step)}, agent::prepare_limit(request));
    } catch (const agent::PolicyError& e) {
        s.container_error = std::string("container refused: ") + e.what();
    } catch (const std::exception& e) {
        // The agent's message says what failed.
        s.container_error = std::string("container: ") + e.what();
    }
}

void enter_container(spank_t sp) {
    PluginState& s = state();
    std::uint32_t job = 0, step = 0;
    if (!wants_container() || !container_step(sp, job, step)) return;
    // A task that asked for an image runs in it or not at all (even when trellis is optional
    // in plugstack.conf, where a failed hook would otherwise let the task run on the host).
    auto refuse = [](const std::string& why) {
        log_error(why + " (the task does not run outside its image)");
        std::_Exit(1);
    };
    if (!s.container)
        refuse(s.container_error.empty() ? "container: the step's container was not made" : s.container_error);
    agent::EnteredTask entered;
    try {
        std::vector<std::string> destinations;
        for (const auto& mount : agent::parse_mounts(s.choices.mounts)) destinations.push_back(mount.destination);
        // The Env is chosen once trellis's own variables are set (apply_image_environment),
        // and the command is slurmstepd's: only the directories are taken here.
        entered = s.container->enter(
            {s.choices.keep_env, false}, destinations, [](const std::string&) { return false; }, {}, s.choices.image);
    } catch (const std::exception& e) {
        refuse(std::string("container: ") + e.what());
    }
    // Once per step, from its first task: where the tasks start, and how to keep the folder.
    std::uint32_t rank = 1;
    if (!entered.start_note.empty() && spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) == ESPANK_SUCCESS && rank == 0) {
        std::string line = "trellis: " + entered.start_note + "\n";
        std::fputs(line.c_str(), stderr);
    }
    // Once per node: what the container's GPUs lack or skipped (CDI).
    std::uint32_t local = 1;
    if (spank_get_item(sp, S_TASK_ID, &local) == ESPANK_SUCCESS && local == 0)
        for (const auto& text : entered.notes) {
            std::string line = "trellis: " + (s.plan ? s.plan->host + ": " : std::string()) + text + "\n";
            std::fputs(line.c_str(), stderr);
        }
}

void refuse_unhonoured_image(spank_t sp) {
    std::uint32_t job = 0, step = 0;
    if (!container_step(sp, job, step)) return;
    if (state().choices.image.empty() && job_env(sp, env::image.name).empty()) return;
    log_error(
        "container: an image was asked for, but trellis is disabled on this node (its configuration "
        "could not be read; see slurmd's log): the task does not run outside its image");
    std::_Exit(1);
}

void let_go_of_container() { state().container.reset(); }

int set_container_environment(spank_t sp) {
    if (!wants_container()) return 0;
    // PMIx inside the image may be built with other defaults: name the components the
    // server uses, as Slurm's own variables report them.
    for (const auto& [from, to] :
         {std::pair{"PMIX_PTL_MODULE", "PMIX_MCA_ptl"}, std::pair{"PMIX_SECURITY_MODE", "PMIX_MCA_psec"},
          std::pair{"PMIX_GDS_MODULE", "PMIX_MCA_gds"}}) {
        auto value = job_env(sp, from);
        if (!value.empty()) spank_setenv(sp, to, value.c_str(), 0);
    }
    spank_setenv(sp, env::image.name, state().choices.image.c_str(), 1);
    return 0;
}

int apply_image_environment(spank_t sp) {
    PluginState& s = state();
    if (!s.container) return 0;
    auto settings = agent::parse_image_settings(s.container->image_settings());
    auto task_has = [sp](const std::string& name) { return !job_env(sp, name.c_str()).empty(); };
    for (const auto& [name, value] : agent::image_env_for_task(settings, {s.choices.keep_env, false}, task_has))
        if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS)
            log_error("cannot set the image's " + name + " in the task's environment");
    return 0;
}

}  // namespace trellis::spank
