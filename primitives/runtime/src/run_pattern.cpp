// run(): a pattern through its classified task. Packing helpers map the
// pattern's per-destination packets onto the task's block layouts.

#include "switchyard/primitives/run_pattern.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "switchyard/primitives/multinode.hpp"
#include "switchyard/primitives/single_node.hpp"

namespace switchyard::primitives {
namespace {

using detail::invalid;

// This member's view of the pattern: its packets by destination, its buffers by source.
struct Local {
  const Pattern& p;
  PatternBuffers b;
  Rank me;
  const Combiner* combine;
  std::vector<Rank> sources;  // ranks that send to me, ascending

  // The packet I send to d (a dummy, zero, if the pattern sends none).
  std::span<const std::byte> packet_to(Rank d, std::span<const std::byte> dummy) const {
    const auto& to = p.sends[me].to;
    const auto it = std::lower_bound(to.begin(), to.end(), d);
    if (it == to.end() || *it != d) return dummy;
    return p.sends[me].same_packet ? b.send[0] : b.send[it - to.begin()];
  }
  // Where the packet from s goes, or an empty span if the pattern sends none.
  std::span<std::byte> buffer_from(Rank s) const {
    const auto it = std::lower_bound(sources.begin(), sources.end(), s);
    if (it == sources.end() || *it != s) return {};
    return p.combinable ? b.recv[0] : b.recv[it - sources.begin()];
  }
  // Hands over the packet from s if the pattern sends one; a combinable
  // pattern's packets are combined in the order they come (rank order).
  void deliver(Rank s, std::span<const std::byte> packet) const {
    const auto to = buffer_from(s);
    if (to.empty()) return;
    if (p.combinable && s != sources.front()) {
      (*combine)(to, packet.first(p.bytes));
    } else {
      std::memcpy(to.data(), packet.data(), p.bytes);
    }
  }
  // Packs my packets for `destinations` (one block each) into out.
  void pack(std::span<const Rank> destinations, std::span<std::byte> out, std::span<const std::byte> dummy) const {
    for (std::size_t j = 0; j < destinations.size(); ++j) {
      std::memcpy(out.data() + j * p.bytes, packet_to(destinations[j], dummy).data(), p.bytes);
    }
  }
  // Copies block j of `in` (from senders[j]) to where the pattern wants it.
  void unpack(std::span<const Rank> senders, std::span<const std::byte> in) const {
    for (std::size_t j = 0; j < senders.size(); ++j) {
      if (senders[j] != me) deliver(senders[j], in.subspan(j * p.bytes, p.bytes));
    }
  }
};

Local local_view(const Pattern& p, PatternBuffers b, Rank me, const Combiner* combine) {
  Local l{p, b, me, combine, {}};
  for (Rank s = 0; s < p.processes; ++s) {
    if (std::binary_search(p.sends[s].to.begin(), p.sends[s].to.end(), me)) l.sources.push_back(s);
  }
  const auto& mine = p.sends[me];
  const std::size_t packets = mine.to.empty() ? 0 : mine.same_packet ? 1 : mine.to.size();
  const std::size_t buffers = p.combinable ? (l.sources.empty() ? 0 : 1) : l.sources.size();
  if (b.send.size() != packets || b.recv.size() != buffers) {
    invalid("run", "rank " + std::to_string(me) + " passed " + std::to_string(b.send.size()) + " packets and " +
                       std::to_string(b.recv.size()) + " receive buffers where its pattern needs " +
                       std::to_string(packets) + " and " + std::to_string(buffers));
  }
  for (const auto& s : b.send) detail::check_size(s.size(), p.bytes, "run", "a packet");
  for (const auto& r : b.recv) detail::check_size(r.size(), p.bytes, "run", "a receive buffer");
  return l;
}

// The combining tasks: one SSNA per destination over its sources (the
// pattern's packets exclude a destination's own, so the API's PMNA, which
// includes it, does not fit).
Task<void> run_combined(Communicator comm, const Local& l, const Classification& c, const Combiner& op,
                        CallOptions options) {
  for (Rank d : c.receivers) {
    std::vector<Rank> senders;
    for (Rank s : c.senders)
      if (s != d) senders.push_back(s);
    const bool sends = std::binary_search(senders.begin(), senders.end(), l.me);
    const std::vector<std::byte> none;
    const auto mine = sends ? l.packet_to(d, none) : std::span<const std::byte>{};
    const auto result = l.me == d ? l.buffer_from(senders.front()) : std::span<std::byte>{};
    co_await ssna_bytes(comm, d, senders, mine, result, op, options);
  }
}

// SNB, SSNB, MNB, PMNB: the copy tasks, through PMNB or SSNB.
Task<void> run_copied(Communicator comm, const Local& l, const Classification& c, CallOptions options) {
  const std::size_t b = l.p.bytes;
  const std::vector<std::byte> dummy(b);
  const auto mine = l.p.sends[l.me].to.empty() ? std::span<const std::byte>(dummy) : l.b.send[0];
  if (c.senders.size() == 1) {
    const Rank root = c.senders[0];
    std::vector<std::byte> buffer(mine.begin(), mine.end());
    co_await ssnb(comm, root, c.receivers, buffer, options);
    l.unpack(c.senders, buffer);
    co_return;
  }
  std::vector<std::byte> all(c.senders.size() * b);
  co_await pmnb(comm, c.senders, mine, all, options);
  l.unpack(c.senders, all);
}

// The personalized tasks.
Task<void> run_personal(Communicator comm, const Local& l, const Classification& c, CallOptions options) {
  const std::size_t b = l.p.bytes;
  const Rank n = l.p.processes;
  const std::vector<std::byte> dummy(b);
  const std::vector<Rank> everyone = detail::all_ranks(n);
  std::vector<std::byte> send, recv;
  switch (c.task) {
    case StaticTask::kOneToOne: {
      recv.resize(b);
      co_await one_to_one(comm, c.senders[0], c.receivers[0], l.packet_to(c.receivers[0], dummy), recv);
      break;
    }
    case StaticTask::kPermutation: {
      std::vector<Rank> destination(n, kNoPacket);
      for (Rank s = 0; s < n; ++s)
        if (!l.p.sends[s].to.empty()) destination[s] = l.p.sends[s].to[0];
      recv.resize(b);
      const auto out = destination[l.me] == kNoPacket ? std::span<const std::byte>{} : l.b.send[0];
      co_await permutation(comm, destination, out, recv, options);
      if (!l.sources.empty()) l.deliver(l.sources[0], recv);
      co_return;
    }
    case StaticTask::kSns:
    case StaticTask::kSsns: {
      if (l.me == c.senders[0]) send.resize(c.receivers.size() * b), l.pack(c.receivers, send, dummy);
      recv.resize(b);
      co_await ssns(comm, c.senders[0], c.receivers, send, recv, options);
      break;
    }
    case StaticTask::kSng:
    case StaticTask::kSsng: {
      const Rank root = c.receivers[0];
      send.resize(b);
      l.pack(c.receivers, send, dummy);
      if (l.me == root) recv.resize(c.senders.size() * b);
      co_await ssng(comm, root, c.senders, send, recv, options);
      if (l.me == root) l.unpack(c.senders, recv);
      co_return;
    }
    default: {  // TE, PMNS, PMNG: senders x everyone or everyone x receivers
      const bool by_senders = c.task == StaticTask::kPmns;
      const bool i_send = std::binary_search(c.senders.begin(), c.senders.end(), l.me);
      const bool i_receive = std::binary_search(c.receivers.begin(), c.receivers.end(), l.me);
      if (i_send) send.resize(c.receivers.size() * b), l.pack(c.receivers, send, dummy);
      if (i_receive) recv.resize(c.senders.size() * b);
      if (c.task == StaticTask::kTe) {
        co_await te(comm, send, recv, options);
      } else if (by_senders) {
        co_await pmns(comm, c.senders, send, recv, options);
      } else {
        co_await pmng(comm, c.receivers, send, recv, options);
      }
      if (i_receive) l.unpack(c.senders, recv);
      co_return;
    }
  }
  // One packet in recv, from the single sender.
  if (l.me != c.senders[0]) l.deliver(c.senders[0], recv);
}

}  // namespace

Task<Classification> run(Communicator comm, const Pattern& p, PatternBuffers buffers, const Combiner* combine,
                         CallOptions options) {
  if (p.processes != comm.size()) {
    invalid("run", "the pattern is for " + std::to_string(p.processes) + " processes, the communicator has " +
                       std::to_string(comm.size()));
  }
  if (p.combinable && !combine) invalid("run", "a combinable pattern needs a Combiner");
  Classification c = classify(p);
  const Local l = local_view(p, buffers, comm.rank(), combine);
  switch (shape_of(c.task).packets) {
    case Packets::kCombined:
      co_await run_combined(comm, l, c, *combine, options);
      break;
    case Packets::kCopied:
      co_await run_copied(comm, l, c, options);
      break;
    case Packets::kPersonal:
      co_await run_personal(comm, l, c, options);
      break;
  }
  co_return c;
}

}  // namespace switchyard::primitives
