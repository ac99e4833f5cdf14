#pragma once
// What the routers and producers of a real-mode pipeline share: the packet
// layout, the tags, the per-node counters the sampler reads, and the ledger
// in which a router records every packet it receives.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "switchyard/cache_line.hpp"
#include "switchyard/dynamic/real_pipeline.hpp"
#include "switchyard/errors.hpp"

namespace switchyard::dynamic::detail {

using Clock = std::chrono::steady_clock;

inline constexpr Tag kRequestTag = 1;  // producer -> its router (world)
inline constexpr Tag kWakeTag = 2;  // router -> routers: the period after an empty one begins
inline constexpr Tag kForwardTag = 3;  // direct broadcasting: a packet on a tree link, or a done notice
inline constexpr Rank kEveryone = ~Rank{0};  // a broadcast packet's destination

enum class PacketKind : std::uint32_t { kData = 0, kDone = 1 };

// The first bytes of every packet (the payload follows), and of a producer's
// done notice (sequence = the requests it generated).
struct PacketHeader {
  Rank origin = 0;
  Rank destination = kEveryone;  // scattering: the receiver
  std::uint64_t sequence = 0;
  std::int64_t generated_ns = 0;  // steady_clock, since its epoch
  std::uint32_t tree = 0;  // direct broadcasting: the packet's class
  PacketKind kind = PacketKind::kData;
};
static_assert(sizeof(PacketHeader) == 32);

inline PacketHeader header_of(std::span<const std::byte> packet) {
  PacketHeader h;
  std::memcpy(&h, packet.data(), sizeof h);
  return h;
}

// Written by one thread each, read by the sampler while the job runs
// (relaxed: a sample of counts that only grow; run() reads the final values
// after the job, which orders them).
struct alignas(kCacheLine) NodeCounters {
  std::atomic<std::uint64_t> generated{0};  // by the node's producer
  std::atomic<std::uint64_t> delivered{0};  // by the node's router
  // A Poisson producer's next arrival (ns since the clock's epoch; 0: none
  // due): one it holds back while the pipeline is full shows in the backlog.
  std::atomic<std::int64_t> due_ns{0};
};
static_assert(kOwnsCacheLines<NodeCounters>, "shared across cores: cache lines of its own");

// Every packet a router receives: refuses a duplicate or a stranger, counts
// per origin, sums the reception delays and keeps a sample of them (one
// request in kSampleEvery) for the completion delay, then hands it on.
class Ledger {
 public:
  static constexpr std::uint64_t kSampleEvery = 4;

  Ledger(Rank me, Rank nodes, NodeCounters& counters, std::function<void(const Delivery&)> deliver)
      : me_(me),
        seen_(nodes),
        received_(nodes, 0),
        sampled_(nodes),
        counters_(counters),
        deliver_(std::move(deliver)) {}

  void receive(std::span<const std::byte> packet) {
    const PacketHeader h = header_of(packet);
    if (h.origin >= seen_.size() || h.origin == me_ || (h.destination != kEveryone && h.destination != me_)) {
      throw Error("switchyard dynamic: node " + std::to_string(me_) + " received a packet of origin " +
                  std::to_string(h.origin) + " for " + std::to_string(h.destination) + ": not one it should");
    }
    std::vector<bool>& seen = seen_[h.origin];
    if (h.sequence >= seen.size()) seen.resize(std::max<std::size_t>(h.sequence + 1, seen.size() * 2), false);
    if (seen[h.sequence]) {
      throw Error("switchyard dynamic: node " + std::to_string(me_) + " received request " +
                  std::to_string(h.sequence) + " of node " + std::to_string(h.origin) + " twice");
    }
    seen[h.sequence] = true;
    ++received_[h.origin];
    const auto generated = Clock::time_point(Clock::duration(h.generated_ns));
    const auto now = Clock::now();
    const std::int64_t delay = (now - generated).count();
    delay_sum_ns_ += static_cast<double>(delay);
    if (h.sequence % kSampleEvery == 0) {
      std::vector<std::int64_t>& s = sampled_[h.origin];
      const std::size_t i = h.sequence / kSampleEvery;
      if (i >= s.size()) s.resize(std::max<std::size_t>(i + 1, s.size() * 2), -1);
      s[i] = delay;
    }
    // Single writer; see NodeCounters.
    counters_.delivered.store(counters_.delivered.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (deliver_) deliver_(Delivery{me_, h.origin, h.sequence, h.destination, generated, packet.subspan(sizeof h)});
  }

  std::uint64_t received_from(Rank origin) const noexcept { return received_[origin]; }
  bool has(Rank origin, std::uint64_t sequence) const noexcept {
    return sequence < seen_[origin].size() && seen_[origin][sequence];
  }
  double delay_sum_ns() const noexcept { return delay_sum_ns_; }
  // The sampled delay of request `sequence` (a multiple of kSampleEvery) of `origin`, -1 if none.
  std::int64_t sampled_delay(Rank origin, std::uint64_t sequence) const noexcept {
    const std::size_t i = sequence / kSampleEvery;
    return i < sampled_[origin].size() ? sampled_[origin][i] : -1;
  }

 private:
  Rank me_;
  std::vector<std::vector<bool>> seen_;
  std::vector<std::uint64_t> received_;
  std::vector<std::vector<std::int64_t>> sampled_;
  double delay_sum_ns_ = 0;
  NodeCounters& counters_;
  std::function<void(const Delivery&)> deliver_;
};

}  // namespace switchyard::dynamic::detail
