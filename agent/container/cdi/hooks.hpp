// SPDX-License-Identifier: Apache-2.0
// CDI hooks as trellis handles them. A spec's hooks are programs an OCI runtime would run as
// root around container creation; a trellis container is made by the job's user, and the
// tasks lose their capabilities at exec, so running them is neither safe nor possible in
// general. Instead the NVIDIA Container Toolkit's hooks (nvidia-cdi-hook SUBCOMMAND, or
// nvidia-ctk hook SUBCOMMAND, as `nvidia-ctk cdi generate` writes them) are read as data:
//   create-symlinks --link TARGET::LINK ...   symbolic links in the container (done)
//   update-ldcache --folder DIR ...           an ld.so.cache built with the host's ldconfig (done)
//   enable-cuda-compat                        skipped with a note: the image's CUDA forward
//                                             compatibility libraries are not put first
//   disable-device-node-modification          skipped with a note: the driver cannot make device
//                                             nodes inside a user namespace anyway
//   update-application-profile                skipped with a note
// Any other hook is refused, unless its path is in [container] allowed_cdi_hooks; then it is
// skipped with a note (this version runs no hook program).
#pragma once

#include <string>
#include <vector>

#include "agent/container/cdi/resolved_edits.hpp"
#include "agent/container/cdi/spec.hpp"

namespace trellis::agent::cdi {

// Adds what `hook` means to `edits`. origin: the spec's file, for messages. Throws Refused
// naming the hook, its file and what is accepted.
void interpret_hook(const Hook& hook, const std::string& origin, const std::vector<std::string>& allowed_hooks,
                    ResolvedEdits& edits);

}  // namespace trellis::agent::cdi
