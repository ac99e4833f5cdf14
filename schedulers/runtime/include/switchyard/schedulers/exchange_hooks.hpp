#pragma once
/// @file
/// ExchangeHooks: how an executor reaches the bytes of one process's messages.
/// Every executor of the project takes them (the schedule executor, AC, DRS_N,
/// and through them ExchangePlan::run), so a caller whose messages are not
/// plain buffers (array redistribution packs and unpacks around the transfer)
/// plugs into any of them the same way.
///
/// Hooks may also describe where their messages lie in the process's memory
/// (describes_memory()): then a compiled run of a plan made from the whole
/// pattern (exchange_plan.hpp) copies every message straight from its sender's
/// memory into its receiver's, block by block, each byte once: no buffer, no
/// packing. Such hooks still give buffers and pack and unpack, for the runs
/// that need them: the message execution, a communicator across nodes (whose
/// members do not share the plan's memory, where descriptions are paired),
/// plans from create() (which hold one member's part, not its peers').

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace switchyard::schedulers {

/// Where part of a message lies: `count` blocks of `length` bytes, block k
/// (k < count) at byte `offset + k * stride` of its process's region (the
/// send or the receive region of ExchangeMemory).
struct StridedRun {
  std::uint64_t offset = 0,  ///< bytes from the region's start to the first block
      length = 0,  ///< bytes of each block
      stride = 0,  ///< bytes from one block's start to the next's
      count = 1;  ///< blocks
};

/// A process's regions for one run: every block of its sends lies in `send`,
/// of its receives in `recv`.
struct ExchangeMemory {
  std::span<const std::byte> send;  ///< holds every block of the process's sends
  std::span<std::byte> recv;  ///< holds every block of its receives
};

/// How an executor reaches the bytes of one process's messages (see the file's
/// description). Entries are indices into the process's sends and receives
/// (its row and its column of the communication matrix, sorted by peer).
class ExchangeHooks {
 public:
  virtual ~ExchangeHooks() = default;
  /// The bytes of send entry i; called as often as the run needs them.
  virtual std::span<const std::byte> send_buffer(std::size_t i) = 0;
  /// Where receive entry i lands; called as often as the run needs it.
  virtual std::span<std::byte> recv_buffer(std::size_t i) = 0;
  /// Once per run, before the first byte of send entry i goes out.
  virtual void before_send(std::size_t) {}
  /// Once per run, once every byte of receive entry i has arrived.
  virtual void after_receive(std::size_t) {}

  // --- memory description (optional) ---
  /// Whether the three calls below describe this process's messages. In a run
  /// that copies straight from them, the four calls above are not made.
  /// Every member's hooks describe memory, or none's: a member that waits for
  /// a peer's description that never comes fails after a minute.
  virtual bool describes_memory() const { return false; }
  /// Appends to `runs` where the message of send entry i (receive entry j)
  /// lies: the blocks of its runs in order are its bytes, exactly the entry's
  /// size. Asked once per plan, on the process's first run: the runs are the
  /// same in every run, only the regions move. Blocks of receives must not
  /// overlap.
  virtual void describe_send(std::size_t, std::vector<StridedRun>&) {}
  /// See describe_send.
  virtual void describe_recv(std::size_t, std::vector<StridedRun>&) {}
  /// This run's regions, asked once per run: they hold every block described.
  virtual ExchangeMemory memory() { return {}; }
};

}  // namespace switchyard::schedulers
