#pragma once
// The machine of the C³ model (Hambrusch & Khokhar): p processors, packet
// length l, message set-up s, latency h, bisection width b, and the protocol
// (store-and-forward or wormhole routing, blocking or non-blocking sends).
// s, h and the charges are in units: one unit is the time to move one packet
// of l bytes through a processor or a link.
//
// The model charges a superstep on independent submachines with the
// submachine's own parameters (the paper's section 2): submachine() derives
// p', h' and b' from the logical shape of a submachine, by the topology.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::model {

/// A process of the whole machine, 0 .. p - 1.
using ProcessId = std::uint32_t;

/// The two receive-list sizes calibration measures the matching walk at
/// (Machine::match_in_cache, Machine::match).
inline constexpr std::uint32_t kMatchInCacheEntries = 256;
/// The size beyond which the walk runs at Machine::match.
inline constexpr std::uint32_t kMatchOutOfCacheEntries = 2048;

/// How a message crosses intermediate processors: whole at each hop, or pipelined.
enum class Routing : std::uint8_t { store_and_forward, wormhole };
/// Whether a send returns before its message is delivered.
enum class SendProtocol : std::uint8_t { nonblocking, blocking };

/// Which charging rules cost() applies. `paper` is the metric exactly as
/// published; `calibrated` charges what a shared-memory node with fewer cores
/// than processes does; `ring_sync` ("ring-sync") charges, per core, the work a
/// message costs at both ends, the receive-list matching a flood of messages
/// causes, the wake-up of every waiting process, the hand-off that ends each
/// superstep, the finite core-to-core ring and the coherence misses of copying
/// freshly written data across cores (see cost.hpp). All stay
/// selectable so that they can be compared against measurements.
enum class ModelVariant : std::uint8_t { paper, calibrated, ring_sync };

/// "paper", "calibrated", "ring-sync".
std::string_view model_variant_name(ModelVariant v) noexcept;
/// nullopt for anything else.
std::optional<ModelVariant> parse_model_variant(std::string_view name) noexcept;
/// "paper, calibrated, ring-sync": for error messages.
std::string model_variant_names();

/// How h and b scale down to a submachine.
enum class Topology : std::uint8_t {
  /// A rows x cols mesh (the Intel Delta): h' and b' follow the average
  /// distance and the bisection of the submachine's sub-mesh.
  mesh,
  /// Every processor one hop from every other (a shared-memory node): h' = h,
  /// b' = min(b, p' / 2) rounded up for a submachine of p' < p processors.
  fully_connected,
};

/// The logical shape of a (sub)machine: rows x cols processes; a linear array
/// has rows = 1. Only mesh machines read it beyond its number of processes.
struct Shape {
  std::uint32_t rows = 1;  ///< rows of the mesh (1: a linear array)
  std::uint32_t cols = 1;  ///< processes per row (columns)
  std::uint64_t processes() const noexcept { return std::uint64_t{rows} * cols; }  ///< rows x cols
  bool operator==(const Shape&) const = default;  ///< the same rows and cols
};

/// Parameters of the submachine a superstep's group runs on.
struct SubmachineParameters {
  std::uint64_t processes = 1;  ///< p'
  double latency = 0;  ///< h'
  double bisection = 1;  ///< b'
};

/// The C³ machine of one level: the paper's parameters, the charging rules
/// (variant), and the calibrated per-core constants the other variants charge.
struct Machine {
  std::string name = "machine";  ///< for reports
  std::uint64_t processes = 1;  ///< p
  std::uint64_t packet_bytes = 1;  ///< l
  double setup = 0;  ///< s, in units
  double latency = 0;  ///< h, in units
  double bisection = 1;  ///< b, packets per unit across the bisection
  Routing routing = Routing::wormhole;  ///< store-and-forward or wormhole
  SendProtocol sends = SendProtocol::nonblocking;  ///< blocking or non-blocking sends
  Topology topology = Topology::fully_connected;  ///< how h and b scale down to a submachine
  Shape shape{};  ///< mesh: rows x cols = processes
  ModelVariant variant = ModelVariant::paper;  ///< which charging rules cost() applies
  /// Charge a process's message to itself (a transfer with src == dst, a local
  /// copy) as a message. Off, the model charges exactly; on, it does the
  /// arithmetic of the paper's Fig. 3 ("we write p when the correct quantity is
  /// p - 1": a leader's own share counts as one of its sends).
  bool charge_local_copies = false;
  /// calibrated variant only: the cores the processes share (processes are
  /// placed on them round-robin, as the runtime does), and the time of a unit.
  std::uint32_t cores = 1;
  double unit_ns = 1;  ///< nanoseconds per unit
  // ring_sync variant only (calibrated; see calibration.hpp):
  double match = 0;  ///< units per receive-list entry a message's match walks past
  /// ... when the receives posted on the core in the superstep number at most
  /// kMatchInCacheEntries: their entries stay in the core's cache (match: at
  /// kMatchOutOfCacheEntries and beyond; log-interpolated between, cost.hpp).
  /// A gather's root at p = 300 posts 299, a flood at p = 100 4950 a core.
  /// Files without it: match.
  double match_in_cache = 0;
  double wake = 0;  ///< units to resume a process waiting on a message (a coroutine switch)
  /// units a core spends copying one piece of a packed (or unpacked) message
  /// (Transfer::packed) beyond its packets: the copy's call and the miss on a
  /// block read from a buffer its process last touched before the core served
  /// its other processes. 2-lev-r,c packs twice what 2-lev-sq does, and at
  /// p = 300, L = 40 B spent 23 % of its samples there against sq's 7-11 %.
  double pack_piece = 0;
  /// units a core spends on a rendezvous message to another core whose payload
  /// it wrote during the algorithm (packed or relayed, not its own buffer sent
  /// in place): the other core's copy read those lines last run, and writing
  /// them again first invalidates them there, a coherence miss each; the other
  /// core's copy then reads every line back out of this core's cache (cost.hpp).
  /// coherence for such a message of the smallest rendezvous size (eager_limit
  /// + 1 bytes), coherence_per_packet for each packet it has beyond that size's.
  /// (Anchored there, not at 0 packets, where no rendezvous message is: an
  /// intercept extrapolated to 0 from the two measured sizes moved by 12-61 %
  /// between back-to-back calibrations; the charge at the measured size is
  /// what repeats.)
  double coherence = 0;
  double coherence_per_packet = 0;  ///< units per packet beyond the smallest rendezvous message's
  /// A core's private cache (its L2, from hwloc; 0: unknown, never exceeded).
  /// When the packed and relayed rendezvous messages a core writes in one
  /// superstep exceed it, their lines have left the private cache before their
  /// receivers read them, on this core or the other: each of them pays a
  /// fraction of the coherence charge, coherence_beyond_cache to another core
  /// and coherence_beyond_cache_same_core to its own (measured there, cost.hpp).
  /// 2-lev-r,c at p = 300, L = 40 B: its column step stays on one core (C = 20
  /// is even), was charged no coherence at all, and took longer than its row step.
  std::uint64_t private_cache_bytes = 0;
  /// The fraction of the coherence charge paid to another core past the private cache.
  double coherence_beyond_cache = 1;
  double coherence_beyond_cache_same_core = 0;  ///< the fraction paid to its own core past the private cache
  std::uint64_t ring_bytes = 65536;  ///< a core-to-core ring's capacity (RunOptions::ring_capacity lines)
  std::uint64_t eager_limit = 512;  ///< larger messages travel by rendezvous: a 48-byte packet in the ring

  /// Throws std::invalid_argument naming the first field out of range.
  void validate() const;
  /// ceil(bytes / l): the packets a message of `bytes` is charged as.
  double packets(std::uint64_t bytes) const noexcept;
  /// The packets of the smallest rendezvous message (eager_limit + 1 bytes).
  double smallest_rendezvous_packets() const noexcept;
  /// What a packed rendezvous message of `bytes` (> eager_limit) costs its
  /// sender's core in coherence misses, in units.
  double coherence_units(std::uint64_t bytes) const noexcept;
  /// h', b' and p' of a submachine of this shape (processes of the shape may be
  /// fewer than rows x cols when p does not fill it: `members`).
  SubmachineParameters submachine(Shape shape, std::uint64_t members) const;
};

/// The paper's 256-processor Intel Delta of Fig. 3: a 16 x 16 wormhole mesh with
/// h = 10, l = 512, b = 16 and s = 8 units, non-blocking sends and receives.
Machine intel_delta_256();

}  // namespace switchyard::model
