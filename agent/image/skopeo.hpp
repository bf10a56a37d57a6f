// SPDX-License-Identifier: Apache-2.0
// skopeo, the one registry client: srun's tag lookup (registry_digest.hpp) and the node's
// import (import.hpp) both ask the registry through it, as the calling user, so that
// credentials, TLS, time limits, size limits and the words of a failure are one rule each:
//   credentials  --authfile $REGISTRY_AUTH_FILE (refused when it cannot be read), else
//                ~/.config/containers/auth.json when it exists: the file's path only, never
//                its contents, on a command line
//   TLS          always said (--tls-verify=true|false), false only for insecure_registries
//   environment  the helper's (PATH, USER, LOGNAME), HOME=/nonexistent so that the user's
//                ~/.config/containers never steers a pull (only the site's /etc/containers is
//                read), the caller's proxy and certificate variables, TMPDIR when given
//   limits       a manifest lookup ends after 60 s; manifests and configurations are read up
//                to image_json_limit
//   failures     RegistryError, classified by skopeo's exit status first (2: not found, from
//                skopeo 1.15 on), its words second (registry_failure)
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/command.hpp"
#include "agent/image/reference.hpp"
#include "common/error.hpp"
#include "config/config.hpp"

namespace trellis::agent {

// Why skopeo failed, from its status and its words.
enum class SkopeoFailure { unauthorized, not_found, plain_http, certificate, unreachable, no_space, other };
SkopeoFailure classify_skopeo(int status, const std::string& said);

// The registry could not be asked, or said no: unreachable, unauthorized, no such image; or
// skopeo could not do its work (`failure` says which).
struct RegistryError : Error {
    explicit RegistryError(const std::string& message, SkopeoFailure failure = SkopeoFailure::other)
        : Error(message), failure(failure) {}
    const char* topic() const override { return "registry"; }
    SkopeoFailure failure;
};

// Where a skopeo call works: its temporaries and, for an archive, what it reads and writes.
struct SkopeoScratch {
    std::string tmpdir;  // --tmpdir and TMPDIR; "": skopeo's default (srun's lookup)
    // An archive opened by the policy check: skopeo gets it as fd 3 and reads /dev/fd/3, in
    // a namespace where only `tmpdir` and `writable` can be written (skopeo unpacks an
    // archive following links of its earlier entries: a crafted one could otherwise write
    // wherever the user can).
    int archive = -1;
    std::vector<std::string> writable = {};
};

// skopeo's reason in one line: the msg="..." of its last log line, at most 400 characters.
std::string skopeo_reason(std::string said);

class Skopeo {
public:
    // Throws RegistryError when config.skopeo is not an absolute path to a program.
    explicit Skopeo(const config::ContainerConfig& config);

    // The credentials file a registry is asked with ("" for none), looked up when a registry
    // is first asked (an archive needs none). Throws RegistryError when $REGISTRY_AUTH_FILE
    // names a file that cannot be read.
    const std::string& credentials() const;

    // The manifest digest ("sha256:...") `image` has now: only its manifest is fetched
    // (inspect --raw: no tag list, no configuration blob), and skopeo's manifest-digest hashes
    // it as registries do. Throws RegistryError.
    std::string manifest_digest(const ImageReference& image, const SkopeoScratch& scratch = {}) const;
    // skopeo copy of `image` into `destination` (oci:LAYOUT:TAG); its lines go to `on_line`
    // as they come. Returns how it ended: a failure is the caller's to word (registry_failure,
    // or a full cache).
    Finished copy(const ImageReference& image, const std::string& destination, const SkopeoScratch& scratch,
                  const std::function<void(const std::string&)>& on_line) const;
    // The configuration of `layout` (oci:LAYOUT:TAG), a local image. Returns how it ended.
    Finished inspect_config(const std::string& layout, const SkopeoScratch& scratch) const;

    // What went wrong while `step` ("looking up", "fetching") `image`, in words the user can
    // act on. An archive's failure is skopeo's own words.
    [[noreturn]] void registry_failure(const ImageReference& image, const std::string& step,
                                       const Finished& result) const;

private:
    Finished run(std::vector<std::string> args, const SkopeoScratch& scratch, const std::string& input = "",
                 const std::function<void(const std::string&)>& on_line = {}) const;
    // The options every call to a registry takes: credentials and TLS (`prefix`: "src-" for copy).
    std::vector<std::string> registry_options(const ImageReference& image, const char* prefix) const;
    // The image as skopeo names it: an archive by its descriptor.
    std::string source(const ImageReference& image, const SkopeoScratch& scratch) const;

    const config::ContainerConfig& config_;
    mutable std::optional<std::string> credentials_;
};

}  // namespace trellis::agent
