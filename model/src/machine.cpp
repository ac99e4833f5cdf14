#include "switchyard/model/machine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace switchyard::model {
namespace {

[[noreturn]] void bad_field(const std::string& machine, const char* field, const std::string& why) {
  throw std::invalid_argument("switchyard::model: machine '" + machine + "': " + field + " " + why);
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
  if (!(setup >= 0) || !std::isfinite(setup)) bad_field(name, "setup", "must be a finite number >= 0");
  if (!(latency >= 0) || !std::isfinite(latency)) bad_field(name, "latency", "must be a finite number >= 0");
  if (!(bisection > 0) || !std::isfinite(bisection)) bad_field(name, "bisection", "must be a finite number > 0");
  if (!(unit_ns > 0) || !std::isfinite(unit_ns)) bad_field(name, "unit_ns", "must be a finite number > 0");
  if (cores == 0) bad_field(name, "cores", "must be at least 1");
  if (!(match >= 0) || !std::isfinite(match)) bad_field(name, "match", "must be a finite number >= 0");
  if (!(wake >= 0) || !std::isfinite(wake)) bad_field(name, "wake", "must be a finite number >= 0");
  if (!(coherence_beyond_cache >= 0) || !std::isfinite(coherence_beyond_cache))
    bad_field(name, "coherence_beyond_cache", "must be a finite number >= 0");
  if (!(coherence_beyond_cache_same_core >= 0) || !std::isfinite(coherence_beyond_cache_same_core))
    bad_field(name, "coherence_beyond_cache_same_core", "must be a finite number >= 0");
  if (!(pack_piece >= 0) || !std::isfinite(pack_piece)) bad_field(name, "pack_piece", "must be a finite number >= 0");
  if (!(coherence >= 0) || !std::isfinite(coherence))
    bad_field(name, "coherence_smallest_rendezvous", "must be a finite number >= 0");
  if (!(coherence_per_packet >= 0) || !std::isfinite(coherence_per_packet))
    bad_field(name, "coherence_per_packet", "must be a finite number >= 0");
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
    case ModelVariant::paper: return "paper";
    case ModelVariant::calibrated: return "calibrated";
    case ModelVariant::ring_sync: return "ring-sync";
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
