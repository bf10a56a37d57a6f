// SPDX-License-Identifier: Apache-2.0
// One registry pull per job. srun imports the pinned image once, as the user, into a folder
// of the user's on its own host (stage_image, before the step exists), and once the step's
// nodes are known sends the squashfs and then its settings to every node of the step with
// Slurm's sbcast (send_image): sbcast passes the blocks down a tree of those nodes (its own
// fanout, 8 by default) and each node's slurmd writes them as the job's user, into that user's
// folder of its own cache, as <hex>.sent-JOB.STEP.sqsh and .json. The step is launched only
// after that, so no node is still fetching while another node's ranks wait for it. Each
// node's prepare then takes the two files into its cache under the digest's lock
// (received_image).
//
// Who writes what: root makes <image_cache>/<uid> (0700, the user's) in the job prolog, on
// every node of the job before its first step when PrologFlags=Alloc; sbcast writes there with
// the job's user's rights only, checked by slurmd against a credential slurmctld signed for
// that job and user; nobody else can enter the folder, so no user can plant an image for
// another. Anything that goes wrong (no folder yet, no sbcast, a tool missing on srun's host)
// leaves each node to import the image itself, as without the broadcast.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/image/cache.hpp"
#include "agent/image/cache_entry.hpp"
#include "config/config.hpp"

namespace trellis::agent {

// "<hex>.sent-JOB.STEP" plus `suffix`: the files the broadcast writes in a node's user folder.
std::string sent_name(const std::string& digest, const std::string& step, const char* suffix);
// Whether `step` is "JOB.STEP" in digits, as Slurm numbers them.
bool is_step_name(const std::string& step);

// The import was stopped by a signal (srun's Ctrl-C): the step is not started.
struct ImportInterrupted : ImageImportError {
    using ImageImportError::ImageImportError;
};

// An image imported on srun's host, to be sent.
struct StagedImage {
    std::string folder;  // where it is ("" for this host's node cache)
    std::string digest, squashfs, settings;
    bool imported = false;  // fetched now (else found there)
    double seconds = 0;
};

// srun's side, as the user, before the step exists: imports `pinned` (docker://...@sha256:)
// with the configured agent into `folder` (staging_folder). `environment` is srun's own
// (credentials, proxies). Throws ImportInterrupted, or ImageImportError saying what failed.
StagedImage stage_image(const std::string& pinned, const config::Config& config, const std::string& folder,
                        const std::vector<std::string>& environment);

// Where srun's host keeps what it imports for a broadcast: the user's folder of this host's
// image cache when root made one (srun runs on a node), else $XDG_CACHE_HOME/trellis/images
// (~/.cache/trellis/images), made 0700 when missing.
std::string staging_folder(const config::ContainerConfig& config, uid_t uid);

// srun's side, once the step exists: sends `image` to the step's nodes with sbcast (found in
// `environment`'s PATH, given that environment without SBCAST_* settings), into the user's
// folder of the configured image_cache there, holding the staged image's lock meanwhile.
// Gives up after `limit` (the step's credential must not expire before its launch). Returns
// the seconds it took; throws ImageImportError saying what failed.
double send_image(const StagedImage& image, const config::Config& config, std::uint32_t job, std::uint32_t step,
                  const std::vector<std::string>& environment, std::chrono::seconds limit);

// A node's side, with `entry` (the digest's lock) held and no image published: publishes the
// files sent for `step` as the image. Returns false when they are not both there; throws
// ImageImportError when they cannot be taken.
bool received_image(const ImageCache& cache, CacheEntry& entry, const std::string& digest, const std::string& step);

// Removes what was sent for `step` and not taken, and sent files older than a day (of steps
// that never reached this node).
void remove_sent_files(const ImageCache& cache, const std::string& digest, const std::string& step);

}  // namespace trellis::agent
