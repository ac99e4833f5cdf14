#include "option_parsers.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "switchyard/schedulers/exchange.hpp"
#include "switchyard/schedulers/scheduler_table.hpp"
#include "switchyard/schedulers/static_schedulers.hpp"

namespace switchyard::cli {

namespace sys = switchyard::schedulers;

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::uint64_t parse_byte_count(std::string_view text, const std::string& what, std::uint64_t max) {
  std::string_view s = trim(text);
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::uint64_t unit = 1;
  for (const auto& [suffix, u] : {std::pair<std::string_view, std::uint64_t>{"kib", 1ull << 10},
                                  {"mib", 1ull << 20},
                                  {"gib", 1ull << 30},
                                  {"k", 1ull << 10},
                                  {"m", 1ull << 20},
                                  {"g", 1ull << 30}}) {
    if (lower.size() > suffix.size() && std::string_view(lower).substr(lower.size() - suffix.size()) == suffix) {
      s.remove_suffix(suffix.size());
      unit = u;
      break;
    }
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw UsageError(what + ": '" + std::string(text) +
                     "' is not a byte count (write e.g. 16, 1024, 64K or 1M; K, M, G are powers of 1024)");
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max / unit) {
    throw UsageError(what + ": '" + std::string(text) + "' is too large; a message may be at most " +
                     std::to_string(max) + " bytes (1 GiB)");
  }
  return v * unit;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto pos = s.find(sep);
    parts.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return parts;
    s.remove_prefix(pos + 1);
  }
}

std::vector<std::uint64_t> parse_byte_list(const std::string& text, std::uint64_t max) {
  if (trim(text).empty()) throw UsageError("--bytes: the list is empty (write e.g. --bytes 16,1024,65536)");
  std::vector<std::uint64_t> sizes;
  for (std::string_view item : split(text, ',')) {
    if (trim(item).empty()) {
      throw UsageError("--bytes: '" + text + "' has an empty entry (write e.g. --bytes 16,1024,65536)");
    }
    sizes.push_back(parse_byte_count(item, "--bytes", max));
    if (sizes.back() == 0) {
      throw UsageError(
          "--bytes: 0 is not a message size: a matrix entry of 0 bytes means no message "
          "(write sizes from 1 byte, e.g. --bytes 16,1024,65536)");
    }
  }
  return sizes;
}

std::vector<int> parse_core_list(const std::string& text) {
  const std::string example = " (write OS CPU numbers, e.g. --cores 0,1 or --cores 0-3; see 'switchyard topology')";
  if (trim(text).empty()) throw UsageError("--cores: the list is empty" + example);
  std::vector<int> cores;
  for (std::string_view item : split(text, ',')) {
    const std::string_view t = trim(item);
    std::string where = std::string("'").append(item).append("'");
    if (item.size() != text.size()) where.append(" in '").append(text).append("'");
    const auto dash = t.find('-', 1);
    std::uint64_t lo = 0, hi = 0;
    try {
      lo = parse_uint(t.substr(0, dash), "--cores", 0, 1 << 20);
      hi = dash == std::string_view::npos ? lo : parse_uint(t.substr(dash + 1), "--cores", 0, 1 << 20);
    } catch (const UsageError&) {
      throw UsageError("--cores: " + where + " is not a CPU number or range" + example);
    }
    if (lo > hi) throw UsageError("--cores: the range " + where + " runs backwards" + example);
    for (auto c = lo; c <= hi; ++c) cores.push_back(static_cast<int>(c));
  }
  return cores;
}

std::string parse_static_scheduler(const std::string& text, const std::string& what) {
  const std::string name(trim(text));
  const sys::SchedulerDescriptor* d = sys::find_scheduler(name);
  if (d && d->kind == sys::SchedulerKind::static_phases) return name;
  const std::string valid = " (static schedulers: " + join(sys::static_scheduler_names()) + ")";
  if (name.empty()) throw UsageError(what + ": a scheduler name is required" + valid);
  if (d) throw UsageError(what + ": '" + name + "' is an online scheme and has no schedule table" + valid);
  throw UsageError(what + ": unknown scheduler '" + name + "'" + valid);
}

std::vector<std::string> parse_scheduler_list(const std::string& text) {
  const std::string valid = " (valid: " + join(sys::default_exchange_schedulers()) + ", auto)";
  if (trim(text).empty()) throw UsageError("--schedulers: the list is empty" + valid);
  std::vector<std::string> names;
  for (std::string_view item : split(text, ',')) {
    const std::string name(trim(item));
    if (name.empty()) throw UsageError("--schedulers: '" + text + "' has an empty entry" + valid);
    if (!sys::is_exchange_scheduler(name)) throw UsageError("--schedulers: unknown scheduler '" + name + "'" + valid);
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw UsageError("--schedulers: '" + name + "' is listed twice");
    }
    names.push_back(name);
  }
  return names;
}

// The network a --topology names, checked against --processes.
primitives::VirtualNetwork parse_topology(const std::string& spec, std::uint64_t n) {
  const std::string what = "--topology '" + spec + "'";
  auto agree = [&](std::uint64_t implied, const std::string& why) {
    if (implied != n) {
      throw UsageError("--processes " + std::to_string(n) + " disagrees with " + what + ", which has " +
                       std::to_string(implied) + " nodes" + why);
    }
  };
  try {
    if (spec == "complete") return primitives::VirtualNetwork::complete(static_cast<primitives::Node>(n));
    if (spec.starts_with("hypercube:")) {
      const auto d = static_cast<int>(parse_uint(spec.substr(10), what + ": the dimension", 0, 24));
      agree(std::uint64_t{1} << d, " (2^" + std::to_string(d) + ")");
      return primitives::VirtualNetwork::hypercube(d);
    }
    if (spec.starts_with("torus:")) {
      std::vector<primitives::Node> sides;
      std::uint64_t nodes = 1;
      for (std::string_view rest = std::string_view(spec).substr(6);;) {
        const auto x = rest.find('x');
        sides.push_back(
            static_cast<primitives::Node>(parse_uint(rest.substr(0, x), what + ": a side", 1, primitives::kMaxNodes)));
        nodes = std::min<std::uint64_t>(nodes * static_cast<std::uint64_t>(sides.back()), std::uint64_t{1} << 40);
        if (x == std::string_view::npos) break;
        rest.remove_prefix(x + 1);
      }
      agree(nodes, "");
      return primitives::VirtualNetwork::torus(sides);
    }
    if (spec.starts_with("tree:")) {
      const auto k = static_cast<int>(parse_uint(spec.substr(5), what + ": the arity K", 1, 1 << 20));
      return primitives::VirtualNetwork::tree(static_cast<primitives::Node>(n), k);
    }
    if (spec.ends_with(".mtx")) {
      auto g = primitives::VirtualNetwork::read_matrix_market_file(spec);
      agree(static_cast<std::uint64_t>(g.size()),
            " (its matrix is " + std::to_string(g.size()) + " x " + std::to_string(g.size()) + ")");
      return g;
    }
  } catch (const switchyard::InvalidArgument& e) {
    throw UsageError(what + ": " + e.what());
  }
  throw UsageError(what +
                   ": not complete, hypercube:D, torus:AxB[xC...], tree:K (a K-ary tree in heap order) or a "
                   ".mtx adjacency file");
}

double parse_positive_real(std::string_view text, const std::string& what) {
  const std::string_view s = trim(text);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !(v > 0) || !std::isfinite(v)) {
    throw UsageError(what + ": '" + std::string(text) + "' is not a positive number (write e.g. 0.01 or 1e-3)");
  }
  return v;
}

}  // namespace switchyard::cli
