#pragma once
// The parsers of option values that several commands share (and that the CLI
// fuzz harness drives). Each throws UsageError naming the option and the value.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli_support.hpp"
#include "switchyard/primitives/virtual_network.hpp"

namespace switchyard::cli {

std::string join(const std::vector<std::string>& items, const char* sep = ", ");
std::vector<std::string_view> split(std::string_view s, char sep);

// A byte count with an optional binary suffix (16, 1024, 64K, 64KiB, 1M, 1G), at most `max`.
std::uint64_t parse_byte_count(std::string_view text, const std::string& what, std::uint64_t max);
// --bytes: a comma-separated list of byte counts, each 1..max.
std::vector<std::uint64_t> parse_byte_list(const std::string& text, std::uint64_t max);
// --cores: a CPU list as taskset writes it: "0,1", "0-3", "0-3,8".
std::vector<int> parse_core_list(const std::string& text);
// The name of a static scheduler, for the commands that need a schedule table.
std::string parse_static_scheduler(const std::string& text, const std::string& what);
// --schedulers: a comma-separated list of exchange schedulers, each once.
std::vector<std::string> parse_scheduler_list(const std::string& text);

// --topology: complete, hypercube:D, torus:AxB[xC...], tree:K or a Matrix
// Market adjacency FILE.mtx, as a virtual network of `n` nodes (the command's
// --processes, which must agree with what the spec implies).
primitives::VirtualNetwork parse_topology(const std::string& spec, std::uint64_t n);
// The --topology option's help, for the commands that take one.
inline constexpr const char* kTopologyHelp =
    "complete, hypercube:D, torus:AxB[xC...] (wraparound mesh), tree:K (K-ary tree in heap order), or a Matrix "
    "Market adjacency FILE.mtx";
// A real number > 0 and finite (a rate), e.g. 0.01, 1e-3; `what` names the option.
double parse_positive_real(std::string_view text, const std::string& what);

}  // namespace switchyard::cli
