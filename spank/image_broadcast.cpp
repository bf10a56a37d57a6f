// One registry pull per job (agent/image/broadcast.hpp): srun imports a step's registry image
// once and sends it to the step's nodes before it is launched; the job prolog makes each
// node's user folder it is sent to.
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "agent/image/broadcast.hpp"
#include "agent/image/cache.hpp"
#include "agent/image/reference.hpp"
#include "common/environment.hpp"
#include "spank/contexts.hpp"
#include "spank/state.hpp"

extern char** environ;

namespace trellis::spank {

void send_image_to_nodes(spank_t sp) {
    const PluginState& s = state();
    if (s.choices.image.empty() || !s.config.container.image_broadcast) return;
    const char* resolved = std::getenv(env::image_pinned.name);
    std::string pinned = resolved && *resolved ? resolved : s.choices.image;
    try {
        auto reference = agent::parse_image_reference(pinned);
        if (reference.kind != agent::ReferenceKind::registry || reference.digest.empty()) return;
    } catch (const std::exception&) {
        return;  // refused with its reason where the option was taken
    }
    std::uint32_t nodes = 0, job = 0, step = 0;
    if (spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS || nodes < 2 ||
        spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
        return;  // one node imports the image itself, as srun's host would
    std::vector<std::string> environment;
    for (char** variable = environ; *variable; ++variable) environment.emplace_back(*variable);
    if (s.choices.verbose) {
        std::string line = "trellis: importing " + pinned + " on srun's host for the step's " + std::to_string(nodes) +
                           " nodes\n";
        std::fputs(line.c_str(), stderr);
    }
    try {
        auto sent = agent::send_image(pinned, s.config, agent::staging_folder(s.config.container, ::getuid()), job, step,
                                      environment);
        if (s.choices.verbose) {
            char line[512];
            std::snprintf(line, sizeof line,
                          "trellis: %s %s on srun's host in %.2f s and sent to the step's nodes in %.2f s (sbcast)\n",
                          pinned.c_str(), sent.imported ? "imported" : "found", sent.import_seconds, sent.send_seconds);
            std::fputs(line, stderr);
        }
    } catch (const std::exception& e) {
        std::string line = std::string("trellis: warning: ") + e.what() +
                           ": each node imports the image itself (image_broadcast in trellis.toml)\n";
        std::fputs(line.c_str(), stderr);
    }
}

void make_cache_folder_for_job(spank_t sp, const std::vector<std::string>& args) {
    auto config = load_config(args, TRELLIS_CONFIG_PATH);
    if (!config.container.image_broadcast || !std::filesystem::is_directory(config.container.image_cache)) return;
    uid_t uid = 0;
    if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || uid == 0) return;
    struct passwd* entry = ::getpwuid(uid);
    if (!entry) return;
    if (auto note = agent::make_user_cache_folder(config.container, uid, entry->pw_gid); !note.empty()) log_info(note);
}

}  // namespace trellis::spank
