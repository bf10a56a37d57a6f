// Which topology a node uses: the configured hwloc XML (with %n standing for the Slurm node
// name, so one pattern can give some nodes a file of their own) or live discovery.
#pragma once

#include <string>

namespace trellis::spank {

// "" means discover the live machine. With %n in the pattern, a node without its own file
// is discovered live; without %n, the file must exist (load_xml reports it otherwise).
std::string topology_xml_for(const std::string& pattern, const std::string& node_name);

}  // namespace trellis::spank
