#include "switchyard/model/machine_file.hpp"

#include "switchyard/bounded_read.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace switchyard::model {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "switchyard-machine/1";

template <class Enum>
struct Names {
  Enum value;
  const char* name;
};
constexpr Names<Routing> kRoutings[] = {{Routing::wormhole, "wormhole"},
                                        {Routing::store_and_forward, "store-and-forward"}};
constexpr Names<SendProtocol> kSends[] = {{SendProtocol::nonblocking, "nonblocking"},
                                          {SendProtocol::blocking, "blocking"}};
constexpr Names<Topology> kTopologies[] = {{Topology::fully_connected, "fully_connected"}, {Topology::mesh, "mesh"}};
constexpr Names<ModelVariant> kVariants[] = {
    {ModelVariant::calibrated, "calibrated"}, {ModelVariant::paper, "paper"}, {ModelVariant::ring_sync, "ring-sync"}};

template <class Enum, std::size_t N>
const char* name_of(const Names<Enum> (&names)[N], Enum v) {
  for (const auto& n : names)
    if (n.value == v) return n.name;
  return "?";
}

// Reads and checks fields of one JSON object, naming source and path in errors.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) fail("", "must be an object");
  }
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw std::invalid_argument(where_ + (field.empty() ? "" : "." + field) + ": " + why);
  }
  double number(const char* field) const {
    const auto it = object_.find(field);
    if (it == object_.end()) fail(field, "missing");
    if (!it->is_number()) fail(field, "must be a number, not " + it->dump());
    return it->get<double>();
  }
  // Fields added after format 1's first files may be absent.
  bool has(const char* field) const { return object_.contains(field); }
  std::uint64_t whole(const char* field, std::uint64_t lo, std::uint64_t hi) const {
    const double v = number(field);
    if (v != static_cast<double>(static_cast<std::uint64_t>(v)) || v < static_cast<double>(lo) ||
        v > static_cast<double>(hi))
      fail(field, "must be a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not " +
                      object_.at(field).dump());
    return static_cast<std::uint64_t>(v);
  }
  template <class Enum, std::size_t N>
  Enum choice(const char* field, const Names<Enum> (&names)[N]) const {
    const auto it = object_.find(field);
    if (it == object_.end()) return names[0].value;
    std::string known;
    for (const auto& n : names) {
      if (it->is_string() && it->get<std::string>() == n.name) return n.value;
      known += (known.empty() ? "" : ", ") + std::string(n.name);
    }
    fail(field, "must be one of " + known + ", not " + it->dump());
  }

 private:
  const json& object_;
  std::string where_;
};

json level_json(const Machine& m) {
  return json{{"packet_bytes", m.packet_bytes},
              {"setup", m.setup},
              {"latency", m.latency},
              {"bisection", m.bisection},
              {"unit_ns", m.unit_ns},
              {"cores", m.cores},
              {"routing", name_of(kRoutings, m.routing)},
              {"sends", name_of(kSends, m.sends)},
              {"topology", name_of(kTopologies, m.topology)},
              {"rows", m.shape.rows},
              {"cols", m.shape.cols},
              {"match", m.match},
              {"match_in_cache", m.match_in_cache},
              {"wake", m.wake},
              {"ring_bytes", m.ring_bytes},
              {"eager_limit", m.eager_limit},
              {"coherence_smallest_rendezvous", m.coherence},
              {"coherence_per_packet", m.coherence_per_packet},
              {"pack_piece", m.pack_piece},
              {"private_cache_bytes", m.private_cache_bytes},
              {"coherence_beyond_cache", m.coherence_beyond_cache},
              {"coherence_beyond_cache_same_core", m.coherence_beyond_cache_same_core}};
}

Machine level_from(const json& j, const std::string& where, ModelVariant variant) {
  const Fields f(j, where);
  Machine m;
  m.name = where;
  m.variant = variant;
  m.packet_bytes = f.whole("packet_bytes", 1, std::uint64_t{1} << 30);
  m.setup = f.number("setup");
  m.latency = f.number("latency");
  m.bisection = f.number("bisection");
  m.unit_ns = f.number("unit_ns");
  m.cores = static_cast<std::uint32_t>(f.whole("cores", 1, 1u << 20));
  m.routing = f.choice("routing", kRoutings);
  m.sends = f.choice("sends", kSends);
  m.topology = f.choice("topology", kTopologies);
  m.shape = Shape{static_cast<std::uint32_t>(f.whole("rows", 1, 1u << 20)),
                  static_cast<std::uint32_t>(f.whole("cols", 1, 1u << 20))};
  m.processes = m.topology == Topology::mesh ? m.shape.processes() : 1;
  // The ring-sync terms (absent from files written before them: not charged).
  if (f.has("match")) m.match = f.number("match");
  m.match_in_cache = f.has("match_in_cache") ? f.number("match_in_cache") : m.match;
  if (f.has("wake")) m.wake = f.number("wake");
  if (f.has("pack_piece")) m.pack_piece = f.number("pack_piece");
  if (f.has("private_cache_bytes")) m.private_cache_bytes = f.whole("private_cache_bytes", 0, std::uint64_t{1} << 40);
  if (f.has("coherence_beyond_cache")) m.coherence_beyond_cache = f.number("coherence_beyond_cache");
  if (f.has("coherence_beyond_cache_same_core"))
    m.coherence_beyond_cache_same_core = f.number("coherence_beyond_cache_same_core");
  if (f.has("coherence_per_packet")) m.coherence_per_packet = f.number("coherence_per_packet");
  if (f.has("ring_bytes")) m.ring_bytes = f.whole("ring_bytes", 1, std::uint64_t{1} << 40);
  if (f.has("eager_limit")) m.eager_limit = f.whole("eager_limit", 0, std::uint64_t{1} << 30);
  if (f.has("coherence_smallest_rendezvous")) {
    m.coherence = f.number("coherence_smallest_rendezvous");
  } else if (f.has("coherence")) {
    // Files written before the anchor (machine.hpp) give the charge at 0 packets.
    m.coherence = f.number("coherence") + m.coherence_per_packet * m.smallest_rendezvous_packets();
  }
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + ": " + e.what());
  }
  return m;
}

// One table of ratios: a number > 0 per entry of bytes.
std::vector<double> ratio_table(const json& values, std::size_t sizes, const Fields& f, const std::string& field) {
  if (!values.is_array() || values.size() != sizes) f.fail(field, "must have one number per entry of bytes");
  for (const json& v : values)
    if (!v.is_number() || !(v.get<double>() > 0)) f.fail(field, "must be numbers > 0, not " + values.dump());
  return values.get<std::vector<double>>();
}

// A non-empty, strictly increasing array of numbers >= `least` (whole ones
// when `whole`).
template <typename T>
std::vector<T> increasing(const json& j, const char* field, double least, bool whole, const Fields& f) {
  const auto values = j.find(field);
  if (values == j.end() || !values->is_array() || values->empty()) f.fail(field, "must be a non-empty array");
  std::vector<T> out;
  for (const json& v : *values) {
    if (!(whole ? v.is_number_unsigned() : v.is_number()) || !(v.get<double>() >= least) ||
        !std::isfinite(v.get<double>()) || (!out.empty() && v.get<T>() <= out.back()))
      f.fail(field, "must be increasing " + std::string(whole ? "whole " : "") +
                        "numbers >= " + std::to_string(static_cast<int>(least)) + ", not " + values->dump());
    out.push_back(v.get<T>());
  }
  return out;
}

ExchangeCorrection correction_from(const json& j, const std::string& where) {
  const Fields f(j, where);
  ExchangeCorrection c;
  c.bytes = increasing<std::uint64_t>(j, "bytes", 1, true, f);
  const bool tabled = j.contains("messages_per_core");
  c.messages_per_core = tabled ? increasing<double>(j, "messages_per_core", 1, false, f) : std::vector<double>{1};
  const auto ratio = j.find("ratio");
  if (ratio == j.end() || !ratio->is_object()) f.fail("ratio", "must be an object");
  for (const auto& [name, tables] : ratio->items()) {
    const std::string field = "ratio." + name;
    if (!tabled) {
      c.ratio[name] = {ratio_table(tables, c.bytes.size(), f, field)};
      continue;
    }
    if (!tables.is_array() || tables.size() != c.messages_per_core.size())
      f.fail(field, "must have one array per entry of messages_per_core");
    for (std::size_t t = 0; t < tables.size(); ++t)
      c.ratio[name].push_back(ratio_table(tables[t], c.bytes.size(), f, field + "[" + std::to_string(t) + "]"));
  }
  if (const auto overhead = j.find("overhead_ns_per_process"); overhead != j.end()) {
    if (!overhead->is_number() || !(overhead->get<double>() >= 0) || !std::isfinite(overhead->get<double>()))
      f.fail("overhead_ns_per_process", "must be a number >= 0, not " + overhead->dump());
    c.overhead_ns_per_process = overhead->get<double>();
  }
  return c;
}

// Where x falls among the increasing knots (> 0), in log: the knot k at or
// below it and the fraction of the way to knot k + 1 (0 at and below the
// first knot, the last knot at and beyond the last).
template <typename Knots>
std::pair<std::size_t, double> bracket_in_log(const Knots& knots, double x) {
  if (x <= static_cast<double>(knots.front())) return {0, 0};
  for (std::size_t k = 1; k < knots.size(); ++k) {
    const double below = static_cast<double>(knots[k - 1]), above = static_cast<double>(knots[k]);
    if (x <= above) return {k - 1, std::log(x / below) / std::log(above / below)};
  }
  return {knots.size() - 1, 0};
}

}  // namespace

double ExchangeCorrection::at(const std::string& scheduler, double message_bytes, double per_core) const {
  const auto it = ratio.find(scheduler);
  if (it == ratio.end() || bytes.empty() || messages_per_core.empty() || it->second.size() != messages_per_core.size())
    return 1;
  const auto [k, along_bytes] = bracket_in_log(bytes, std::max(message_bytes, 1.0));
  const auto [t, along_scale] = bracket_in_log(messages_per_core, per_core);
  const auto in_table = [&, k = k, along_bytes = along_bytes](std::size_t table) {
    const std::vector<double>& r = it->second[table];
    if (r.size() != bytes.size()) return 1.0;
    return along_bytes == 0 ? r[k] : r[k] + (r[k + 1] - r[k]) * along_bytes;
  };
  const double here = in_table(t);
  return along_scale == 0 ? here : here + (in_table(t + 1) - here) * along_scale;
}

MachineFile default_machine_file() {
  MachineFile f;
  Machine& m = f.core;
  m.name = "default two-core node (uncalibrated)";
  m.variant = ModelVariant::ring_sync;
  m.wake = 20;
  m.match = 0.6;
  m.match_in_cache = 0.6;
  m.pack_piece = 1;
  m.coherence = 40;
  m.private_cache_bytes = std::uint64_t{1} << 20;
  m.coherence_beyond_cache = 0.5;
  m.coherence_beyond_cache_same_core = 0.5;
  m.packet_bytes = 64;
  m.setup = 20;
  m.latency = 10;
  m.bisection = 2;
  m.unit_ns = 5;
  m.cores = 2;
  m.shape = Shape{1, 2};
  return f;
}

std::string to_json(const MachineFile& file) {
  json core = level_json(file.core);
  if (!file.measured.empty()) core["measured"] = file.measured;
  core["colocated"] = file.colocated;
  if (!file.exchange.bytes.empty())
    core["exchange_correction"] = {{"bytes", file.exchange.bytes},
                                   {"messages_per_core", file.exchange.messages_per_core},
                                   {"ratio", file.exchange.ratio},
                                   {"overhead_ns_per_process", file.exchange.overhead_ns_per_process}};
  json j{{"format", kFormat},
         {"variant", name_of(kVariants, file.core.variant)},
         {"levels", {{"core", core}, {"node", file.node ? level_json(*file.node) : json(nullptr)}}}};
  return j.dump(2) + "\n";
}

MachineFile parse_machine_file(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    const auto upto = std::min<std::size_t>(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n');
    throw std::invalid_argument(source + ":" + std::to_string(line) + ": not JSON: " + e.what());
  }
  const Fields top(j, source);
  if (!j.contains("format") || j["format"] != kFormat) top.fail("format", std::string("must be \"") + kFormat + "\"");
  const ModelVariant variant = top.choice("variant", kVariants);
  if (!j.contains("levels")) top.fail("levels", "missing");
  const Fields levels(j["levels"], source + ".levels");
  if (!j["levels"].contains("core")) levels.fail("core", "missing");
  MachineFile f;
  f.core = level_from(j["levels"]["core"], source + ".levels.core", variant);
  if (j["levels"].contains("node") && !j["levels"]["node"].is_null())
    f.node = level_from(j["levels"]["node"], source + ".levels.node", variant);
  if (const auto it = j["levels"]["core"].find("measured"); it != j["levels"]["core"].end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_number()) f.measured[k] = v.get<double>();
  if (const auto it = j["levels"]["core"].find("colocated"); it != j["levels"]["core"].end()) {
    if (!it->is_boolean())
      Fields(j["levels"]["core"], source + ".levels.core")
          .fail("colocated", "must be true or false, not " + it->dump());
    f.colocated = it->get<bool>();
  }
  if (const auto it = j["levels"]["core"].find("exchange_correction"); it != j["levels"]["core"].end())
    f.exchange = correction_from(*it, source + ".levels.core.exchange_correction");
  return f;
}

MachineFile read_machine_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot read the machine file");
  std::string text;
  if (!read_at_most(in, kMaxMachineFileBytes, text)) {
    throw std::invalid_argument(path + ": more than " + std::to_string(kMaxMachineFileBytes >> 20) +
                                " MiB: not a machine file (they are a few KiB of JSON)");
  }
  if (in.bad()) throw std::invalid_argument(path + ": read error");
  return parse_machine_file(text, path);
}

}  // namespace switchyard::model
