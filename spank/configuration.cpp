// Reading trellis.toml and the plugstack.conf arguments, in srun and in slurmstepd.
#include "spank/contexts.hpp"
#include "spank/state.hpp"

namespace trellis::spank {

int load_configuration(const std::vector<std::string>& args) {
    try {
        state().config = load_config(args, TRELLIS_CONFIG_PATH);
    } catch (const ConfigError& e) {
        log_error(e.what());
        return -1;
    }
    return 0;
}

}  // namespace trellis::spank
