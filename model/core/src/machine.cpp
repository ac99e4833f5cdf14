#include "switchyard/model/machine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace switchyard::model {
namespace {

[[noreturn]] void bad_field(const std::string& machine, const char* field, const std::string& why) {
  throw std::invalid_argument("switchyard::model: machine '" + machine + "': " + field + " " + why);
}

// A field that must be a finite number >= 0 (or > 0, `positive`).
void require_finite(const std::string& machine, const char* field, double value, bool positive = false) {
  if (!(positive ? value > 0 : value >= 0) || !std::isfinite(value))
    bad_field(machine, field, positive ? "must be a finite number > 0" : "must be a finite number >= 0");
}

// Average distance between two processors of an r x c mesh (uniformly chosen,
// with repetition): (r^2 - 1) / 3r + (c^2 - 1) / 3c.
double mesh_distance(Shape s) {
  const auto one = [](double n) { return (n * n - 1) / (3 * n); };
  return one(s.rows) + one(s.cols);
}

}  // namespace

void Machine::validate() const {
  if (processes == 0) bad_field(name, "processes", "must be at least 1");
  if (packet_bytes == 0) bad_field(name, "packet_bytes", "must be at least 1");
  require_finite(name, "setup", setup);
  require_finite(name, "latency", latency);
  require_finite(name, "bisection", bisection, true);
  require_finite(name, "unit_ns", unit_ns, true);
  if (cores == 0) bad_field(name, "cores", "must be at least 1");
  require_finite(name, "match", match);
  require_finite(name, "match_in_cache", match_in_cache);
  require_finite(name, "wake", wake);
  require_finite(name, "coherence_beyond_cache", coherence_beyond_cache);
  require_finite(name, "coherence_beyond_cache_same_core", coherence_beyond_cache_same_core);
  require_finite(name, "pack_piece", pack_piece);
  require_finite(name, "coherence_smallest_rendezvous", coherence);
  require_finite(name, "coherence_per_packet", coherence_per_packet);
  if (ring_bytes == 0) bad_field(name, "ring_bytes", "must be at least 1");
  if (topology == Topology::mesh && (shape.rows == 0 || shape.cols == 0 || shape.processes() < processes))
    bad_field(name, "shape", "of a mesh must hold its processes");
}

double Machine::packets(std::uint64_t bytes) const noexcept {
  return static_cast<double>((bytes + packet_bytes - 1) / packet_bytes);
}

double Machine::smallest_rendezvous_packets() const noexcept { return packets(eager_limit + 1); }

double Machine::coherence_units(std::uint64_t bytes) const noexcept {
  return coherence + coherence_per_packet * std::max(0.0, packets(bytes) - smallest_rendezvous_packets());
}

SubmachineParameters Machine::submachine(Shape sub, std::uint64_t members) const {
  SubmachineParameters out;
  out.processes = std::max<std::uint64_t>(members, 1);
  if (members >= processes || (topology == Topology::mesh && sub == shape)) {  // the whole machine: h, b as given
    out.latency = latency;
    out.bisection = bisection;
    return out;
  }
  if (topology == Topology::fully_connected) {
    out.latency = latency;
    out.bisection = std::max(1.0, std::min(bisection, std::ceil(static_cast<double>(out.processes) / 2)));
    return out;
  }
  // A sub-mesh: latency in proportion to its average distance, bisection in
  // proportion to its shorter side (the cut across its longer side), so the
  // whole mesh keeps the h and b it was given.
  const double whole = mesh_distance(shape);
  out.latency = whole > 0 ? latency * mesh_distance(sub) / whole : latency;
  const double side = std::min(shape.rows, shape.cols);
  out.bisection = std::max(1.0, bisection * std::min(sub.rows, sub.cols) / side);
  return out;
}

std::string_view model_variant_name(ModelVariant v) noexcept {
  switch (v) {
    case ModelVariant::paper:
      return "paper";
    case ModelVariant::calibrated:
      return "calibrated";
    case ModelVariant::ring_sync:
      return "ring-sync";
  }
  return "?";
}

std::optional<ModelVariant> parse_model_variant(std::string_view name) noexcept {
  for (ModelVariant v : {ModelVariant::paper, ModelVariant::calibrated, ModelVariant::ring_sync})
    if (name == model_variant_name(v)) return v;
  return std::nullopt;
}

std::string model_variant_names() { return "paper, calibrated, ring-sync"; }

Machine intel_delta_256() {
  Machine m;
  m.name = "intel-delta-256";
  m.processes = 256;
  m.packet_bytes = 512;
  m.setup = 8;
  m.latency = 10;
  m.bisection = 16;
  m.routing = Routing::wormhole;
  m.sends = SendProtocol::nonblocking;
  m.topology = Topology::mesh;
  m.shape = Shape{16, 16};
  return m;
}

}  // namespace switchyard::model
