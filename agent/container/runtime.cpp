#include "agent/container/runtime.hpp"

#include "agent/container/oci_runtime.hpp"
#include "agent/container/singularity_runtime.hpp"

namespace trellis::agent {

std::unique_ptr<ContainerRuntime> make_runtime(const std::string& configured, ImageKind kind) {
    if (kind == ImageKind::oci_bundle) {
        if (configured != "auto" && configured != "oci")
            throw RuntimeError("an OCI bundle needs the oci runtime, but [container] runtime is '" + configured + "'");
        if (find_program("runc").empty()) throw RuntimeError("runc not found in PATH (apt-get install runc)");
        return std::make_unique<OciRuntime>();
    }
    if (configured == "oci") throw RuntimeError("a .sif image needs singularity or apptainer, but [container] runtime is 'oci'");
    for (std::string name : {"apptainer", "singularity"})
        if ((configured == "auto" || configured == name) && !find_program(name).empty())
            return std::make_unique<SingularityRuntime>(name);
    throw RuntimeError(configured == "auto" ? "neither apptainer nor singularity is in PATH: .sif images cannot run here"
                                            : configured + " not found in PATH");
}

std::unique_ptr<ContainerRuntime> runtime_named(const std::string& name) {
    if (name == "oci") return std::make_unique<OciRuntime>();
    if (name == "apptainer" || name == "singularity") return std::make_unique<SingularityRuntime>(name);
    throw RuntimeError("unknown runtime '" + name + "' in a container's state");
}

}  // namespace trellis::agent
