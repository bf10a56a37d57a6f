// One registry pull per job. For a step on several nodes srun imports the pinned image once,
// as the user, into a folder of the user's on its own host, and sends the squashfs and then
// its settings to every node of the step with Slurm's sbcast: slurmd passes the blocks down a
// tree of those nodes and each writes them as the job's user, into that user's folder of
// its own cache, as <hex>.sent-JOB.STEP.sqsh and .json. The step is launched only after that,
// so no node is still fetching while another node's ranks wait for it. Each node's prepare
// then takes the two files into its cache under the digest's lock (received_image).
//
// Who writes what: root makes <image_cache>/<uid> (0700, the user's) in the job prolog, on
// every node of the job before its first step when PrologFlags=Alloc; sbcast writes there with
// the job's user's rights only, checked by slurmd against a credential slurmctld signed for
// that job and user; nobody else can enter the folder, so no user can plant an image for
// another. Anything that goes wrong (no folder yet, no sbcast, a tool missing on srun's host)
// leaves each node to import the image itself, as without the broadcast.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/image/cache.hpp"
#include "agent/image/cache_entry.hpp"
#include "config/config.hpp"

namespace trellis::agent {

// "<hex>.sent-JOB.STEP" plus `suffix`: the files the broadcast writes in a node's user folder.
std::string sent_name(const std::string& digest, const std::string& step, const char* suffix);

struct SentImage {
    std::string digest;
    bool imported = false;         // fetched on srun's host (else found in its folder)
    double import_seconds = 0;     // srun's import, found or fetched
    double send_seconds = 0;       // both sbcasts, until the last node wrote the last block
};

// srun's side, as the user: imports `pinned` (docker://...@sha256:) with `agent` into
// `staging` (a folder of the user's; "" for the node cache when srun runs on a node) and sends
// it to the step's nodes. `environment` is srun's own (credentials, proxies, SLURM_CONF).
// Throws ImageImportError saying what failed; nothing is sent then.
SentImage send_image(const std::string& pinned, const config::Config& config, const std::string& staging,
                     std::uint32_t job, std::uint32_t step, const std::vector<std::string>& environment);

// Where srun's host keeps what it imports for a broadcast: the user's folder of this host's
// image cache when root made one (srun runs on a node), else $XDG_CACHE_HOME/trellis/images
// (~/.cache/trellis/images), made 0700 when missing.
std::string staging_folder(const config::ContainerConfig& config, uid_t uid);

// A node's side, with `entry` (the digest's lock) held and no image published: publishes the
// files sent for `step` as the image. Returns false when they are not both there.
bool received_image(const ImageCache& cache, CacheEntry& entry, const std::string& digest, const std::string& step);

// Removes what was sent for `step` and not taken, and sent files older than a day (of steps
// that never reached this node).
void remove_sent_files(const ImageCache& cache, const std::string& digest, const std::string& step);

}  // namespace trellis::agent
