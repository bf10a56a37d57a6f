// SPDX-License-Identifier: Apache-2.0
// A registry image's tag resolved to its manifest digest, once per srun, by the user's own
// process (skopeo, with the user's own credentials), so that every node of the step imports
// the same image even when the tag moves while the step starts. Nodes without a way out can
// be given a lifetime during which a digest, once resolved, is taken from the user's own
// record instead of the registry ([container] digest_lifetime).
#pragma once

#include <ctime>
#include <string>

#include "agent/image/reference.hpp"
#include "agent/image/skopeo.hpp"
#include "config/config.hpp"

namespace trellis::agent {

// `reference`'s manifest digest ("sha256:..."): its own when it is pinned (no request made),
// else the one remembered for its tag within config.digest_lifetime seconds, else the
// registry's answer (Skopeo::manifest_digest, as the caller), which is then remembered.
// Throws RegistryError saying what went wrong.
std::string resolve_digest(const ImageReference& reference, const config::ContainerConfig& config);

// `image` checked against the policy (check_image, which throws PolicyError before any
// request is made) and, when it is a registry image with a tag, pinned to its digest
// (resolve_digest): docker://HOST/REPO@sha256:.... Any other image comes back as given.
std::string checked_and_pinned(const std::string& image, const config::ContainerConfig& config);

// "$XDG_CACHE_HOME/trellis/NAME", else "$HOME/.cache/trellis/NAME": the user's own trellis
// files on srun's host.
std::string user_cache_path(const std::string& name);

// Where the user's resolved digests are remembered: $XDG_CACHE_HOME/trellis/digests, else
// $HOME/.cache/trellis/digests. One line each: "SECONDS REFERENCE DIGEST".
std::string digest_record_path();

// The digest remembered for `reference` (its text()) no longer ago than `lifetime` seconds
// before `now`, or "".
std::string remembered_digest(const std::string& record, const ImageReference& reference, long lifetime,
                              std::time_t now);
// Records `digest` for `reference` at `now`, replacing what was recorded for it and dropping
// lines older than `lifetime`; written to a temporary file beside it and renamed over it, so
// that concurrent sruns never see half a file.
void remember_digest(const std::string& record, const ImageReference& reference, const std::string& digest,
                     long lifetime, std::time_t now);

}  // namespace trellis::agent
