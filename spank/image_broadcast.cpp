// SPDX-License-Identifier: Apache-2.0
// One registry pull per job (agent/image/broadcast.hpp): srun imports a step's registry image
// once, before the step exists, and sends it to the step's nodes before the launch; the job
// prolog makes each node's user folder it is sent to.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "agent/image/broadcast.hpp"
#include "agent/image/cache.hpp"
#include "agent/image/reference.hpp"
#include "slurm/slurm_config.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"

extern char** environ;

namespace trellis::spank {
namespace {

std::vector<std::string> srun_environment() {
    std::vector<std::string> environment;
    for (char** variable = environ; *variable; ++variable) environment.emplace_back(*variable);
    return environment;
}

void say(const std::string& line) { std::fputs(("trellis: " + line + "\n").c_str(), stderr); }

// Runs one part of the broadcast: interrupted (srun's Ctrl-C), the step does not start (-1);
// failed, each node imports the image itself, as without the broadcast (0).
template <typename Part>
int or_fall_back(Part&& part) {
    try {
        part();
    } catch (const agent::ImportInterrupted& e) {
        log_error(std::string("container: ") + e.what());
        return -1;
    } catch (const std::exception& e) {
        say(std::string("warning: ") + e.what() +
            ": each node that lacks the image imports it itself (image_broadcast in trellis.toml)");
    }
    return 0;
}

}  // namespace

int stage_image_for_step(const std::string& pinned) {
    PluginState& s = state();
    // A heterogeneous step is launched under its first component's job: the others' nodes
    // would keep files addressed to a job they do not run.
    // Root's steps are refused an image on the nodes (imports run as the job's user): nothing
    // to import for them here either.
    if (!s.config.container.image_broadcast || std::getenv("SLURM_HET_SIZE") || ::getuid() == 0) return 0;
    if (s.choices.verbose) say("importing " + pinned + " on srun's host, to send it to the step's nodes");
    return or_fall_back([&] {
        s.staged = agent::stage_image(pinned, s.config, agent::staging_folder(s.config.container, ::getuid()),
                                      srun_environment());
    });
}

int send_image_to_nodes(spank_t sp) {
    PluginState& s = state();
    std::uint32_t job = 0, step = 0;
    if (!s.staged || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
        return 0;
    // The step exists now, and its credential expires: the launch must reach the nodes before.
    long limit = std::max(10L, slurm::credential_lifetime(slurm::slurm_conf_from_environment()) - 30);
    return or_fall_back([&] {
        double seconds =
            agent::send_image(*s.staged, s.config, job, step, srun_environment(), std::chrono::seconds(limit));
        if (s.choices.verbose) {
            char line[512];
            std::snprintf(
                line, sizeof line, "%s %s on srun's host in %.2f s and sent to the step's nodes in %.2f s (sbcast)",
                s.staged->digest.c_str(), s.staged->imported ? "imported" : "found", s.staged->seconds, seconds);
            say(line);
        }
    });
}

void make_cache_folder_for_job(spank_t sp, const std::vector<std::string>& args) {
    auto config = load_config(args, TRELLIS_CONFIG_PATH);
    if (!config.container.image_broadcast || !std::filesystem::is_directory(config.container.image_cache)) return;
    uid_t uid = 0;
    gid_t gid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
        log_error("job_prolog: Slurm gave no job user: no image cache folder made");
        return;
    }
    if (uid == 0) return;  // root's steps import nothing (the agent refuses root)
    if (auto note = agent::make_user_cache_folder(config.container, uid, gid); !note.empty()) log_info(note);
}

}  // namespace trellis::spank
