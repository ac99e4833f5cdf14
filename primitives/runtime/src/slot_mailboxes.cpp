#include "switchyard/primitives/slot_mailboxes.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "switchyard/detail/pooled_array.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/schedulers/payload.hpp"

namespace switchyard::primitives {

void fill_packet_bytes(std::span<std::byte> out, PacketId packet, Node origin) {
  schedulers::fill_payload(out, static_cast<std::uint64_t>(packet), static_cast<Rank>(origin), 0);
}

void combine_packet_bytes(std::span<std::byte> into, std::span<const std::byte> add) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= into.size(); i += 8) {
    std::uint64_t a, b;
    std::memcpy(&a, into.data() + i, 8);
    std::memcpy(&b, add.data() + i, 8);
    a += b;
    std::memcpy(into.data() + i, &a, 8);
  }
  for (; i < into.size(); ++i)
    into[i] = static_cast<std::byte>(static_cast<unsigned>(into[i]) + static_cast<unsigned>(add[i]));
}

namespace {

constexpr std::int64_t kMaxProgramBytes = SlotProgram::kMaxBytes;
// Per message: a buffer's stride beside two ops of 48 bytes; per origin buffer, a fill of 32.
constexpr std::int64_t kOpBytes = 2 * 48, kFillBytes = 32;

std::int64_t stride_of(std::uint64_t bytes) { return static_cast<std::int64_t>((bytes + 7) / 8 * 8); }

// One message of a process in one slot. Buffers are offsets into the arena.
struct Op {
  std::int32_t slot;
  Node peer;
  std::int64_t buffer;
  // Receive of a combining packet: the accumulator the received partial is
  // added to. Send of one: the accumulator itself, emptied once sent (hand-over).
  std::int64_t accumulator;
  bool send;
};
// A buffer filled before slot 0: with packet's bytes from `origin`, or zeros (origin -1).
struct Fill {
  std::int64_t buffer;
  PacketId packet;
  Node origin;
};
// A destination's buffer to verify after the last slot.
struct Check {
  std::int64_t buffer;
  PacketId packet;
};

// Groups items by process, keeping their order (slot order for ops).
template <class T>
void by_process(std::vector<std::pair<Node, T>>& items, Node n, std::vector<std::int64_t>& begin, std::vector<T>& out) {
  begin.assign(static_cast<std::size_t>(n) + 1, 0);
  for (const auto& [v, x] : items) ++begin[static_cast<std::size_t>(v) + 1];
  for (Node v = 0; v < n; ++v) begin[v + 1] += begin[v];
  out.resize(items.size());
  std::vector<std::int64_t> fill(begin.begin(), begin.end() - 1);
  for (auto& [v, x] : items) out[fill[v]++] = x;
  items.clear();
  items.shrink_to_fit();
}

}  // namespace

struct SlotProgram::Plan {
  PacketSet packets;
  Node n = 0;
  std::uint64_t bytes = 0;
  std::vector<std::int64_t> op_begin, fill_begin, check_begin;
  std::vector<Op> ops;
  std::vector<Fill> fills;
  std::vector<Check> checks;
  std::vector<std::int32_t> max_receives, max_sends;  // per process, the most in one slot
  std::int64_t arena_bytes = 0;
  std::unique_ptr<std::byte[]> arena;
  // Per process, written only by that process during a run.
  mutable std::vector<std::int32_t> slots_run;
  mutable std::vector<std::int64_t> verified;
  mutable double wall_ms = 0;  // written by rank 0

  std::span<std::byte> buffer(std::int64_t offset) const { return {arena.get() + offset, bytes}; }
  void build(const VirtualNetwork& network, const SlotSchedule& schedule);
  void place_buffers(const std::vector<std::int64_t>& per_node);
  void fill_buffers(Node me) const;
  Task<void> run_slots(Communicator c) const;
  void verify(Node me) const;
};

SlotProgram::SlotProgram(const VirtualNetwork& network, const PacketSet& packets, const SlotSchedule& schedule,
                         std::uint64_t bytes)
    : plan_(std::make_unique<Plan>()) {
  if (bytes == 0) throw InvalidArgument("SlotProgram: a packet needs at least one byte");
  if (packets.nodes() != network.size()) {
    throw InvalidArgument("SlotProgram: the packets are over " + std::to_string(packets.nodes()) +
                          " nodes, the network " + network.name() + " has " + std::to_string(network.size()));
  }
  plan_->packets = packets;
  plan_->n = network.size();
  plan_->bytes = bytes;
  plan_->build(network, schedule);
}

SlotProgram::~SlotProgram() = default;

double SlotProgram::bytes_at_least(std::int64_t packets, std::int64_t deliveries, std::uint64_t bytes) noexcept {
  const double stride = static_cast<double>(stride_of(bytes));
  return static_cast<double>(packets) * (stride + kFillBytes) + static_cast<double>(deliveries) * (stride + kOpBytes);
}

Node SlotProgram::processes() const noexcept { return plan_->n; }

// Holdings: which buffer of a node holds (or accumulates) a packet. Routed
// packets are at one node at a time; the others have a column per node.
namespace {

class Holdings {
 public:
  explicit Holdings(const PacketSet& packets) : packets_(packets), n_(packets.nodes()) {
    index_.assign(static_cast<std::size_t>(packets.size()), -1);
    std::int64_t blocks = 0;
    for (PacketId p = 0; p < packets.size(); ++p) {
      if (packets.combining() || packets.destinations(p).size() > 1) index_[p] = blocks++;
    }
    table_.assign(static_cast<std::size_t>(blocks * n_), -1);
    at_.assign(static_cast<std::size_t>(packets.size()), {-1, -1});
    per_node_.assign(static_cast<std::size_t>(n_), 0);
  }
  // The buffer of node v for packet p, or -1.
  std::int64_t find(Node v, PacketId p) const {
    if (index_[p] >= 0) return table_[index_[p] * n_ + v];
    return at_[p].first == v ? at_[p].second : -1;
  }
  void set(Node v, PacketId p, std::int64_t local) {
    if (index_[p] >= 0)
      table_[index_[p] * n_ + v] = local;
    else
      at_[p] = {v, local};
  }
  // A new buffer of node v: its index among v's buffers (placed in the arena later).
  std::int64_t make(Node v) { return per_node_[v]++; }
  const std::vector<std::int64_t>& per_node() const { return per_node_; }

 private:
  const PacketSet& packets_;
  std::int64_t n_;
  std::vector<std::int64_t> index_;
  std::vector<std::int64_t> table_;
  std::vector<std::pair<Node, std::int64_t>> at_;
  std::vector<std::int64_t> per_node_;
};

std::string where(std::int32_t slot, const Transmission& t) {
  return "slot " + std::to_string(slot) + ": node " + std::to_string(t.from) + " -> node " + std::to_string(t.to) +
         " (packet " + std::to_string(t.packet) + ")";
}

}  // namespace

void SlotProgram::Plan::build(const VirtualNetwork& network, const SlotSchedule& schedule) {
  const std::int64_t tx = static_cast<std::int64_t>(schedule.transmissions().size());
  const std::int64_t stride = stride_of(bytes);
  std::int64_t origin_buffers = 0;
  for (PacketId p = 0; p < packets.size(); ++p) origin_buffers += static_cast<std::int64_t>(packets.origins(p).size());
  const std::int64_t estimate = (origin_buffers + tx) * stride + tx * kOpBytes + origin_buffers * kFillBytes;
  if (estimate > kMaxProgramBytes) {
    throw InvalidArgument("SlotProgram: " + std::to_string(tx) + " messages of " + std::to_string(bytes) +
                          " bytes need about " + std::to_string(estimate >> 20) + " MiB, more than the " +
                          std::to_string(kMaxProgramBytes >> 20) + " MiB allowed");
  }
  Holdings held(packets);
  std::vector<std::pair<Node, Op>> ops_by;
  std::vector<std::pair<Node, Fill>> fills_by;
  std::vector<std::pair<Node, Check>> checks_by;
  ops_by.reserve(static_cast<std::size_t>(2 * tx));
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node o : packets.origins(p)) {
      const std::int64_t b = held.make(o);
      held.set(o, p, b);
      fills_by.push_back({o, {b, p, o}});
    }
  }
  for (std::int32_t slot = 0; slot < schedule.slots(); ++slot) {
    for (const Transmission& t : schedule.slot(slot)) {
      if (!network.adjacent(t.from, t.to))
        throw InvalidArgument(where(slot, t) + ": no such link in " + network.name());
      if (t.packet < 0 || t.packet >= packets.size()) throw InvalidArgument(where(slot, t) + ": no such packet");
      const std::int64_t from = held.find(t.from, t.packet);
      if (from < 0) throw InvalidArgument(where(slot, t) + ": the sender never received the packet");
      std::int64_t into = held.find(t.to, t.packet), accumulator = -1;
      if (packets.combining()) {
        // A partial lands in scratch and is added to the receiver's accumulator (zero unless it is an origin).
        if (into < 0)
          into = held.make(t.to), held.set(t.to, t.packet, into), fills_by.push_back({t.to, {into, t.packet, -1}});
        accumulator = into;
        into = held.make(t.to);
      } else if (into < 0) {
        into = held.make(t.to);
        held.set(t.to, t.packet, into);
      } else {
        into = held.make(t.to);  // a second copy: its own buffer, so no buffer is written while it may be sent
      }
      ops_by.push_back({t.from, {slot, t.to, from, packets.combining() ? from : -1, true}});
      ops_by.push_back({t.to, {slot, t.from, into, accumulator, false}});
    }
  }
  for (PacketId p = 0; p < packets.size(); ++p) {
    for (Node d : packets.destinations(p)) {
      const std::int64_t b = held.find(d, p);
      if (b < 0) {
        throw InvalidArgument("after " + std::to_string(schedule.slots()) + " slots: node " + std::to_string(d) +
                              " never receives packet " + std::to_string(p));
      }
      checks_by.push_back({d, {b, p}});
    }
  }
  by_process(ops_by, n, op_begin, ops);
  by_process(fills_by, n, fill_begin, fills);
  by_process(checks_by, n, check_begin, checks);
  place_buffers(held.per_node());
}

// Each node's buffers are contiguous and start on a cache line of their own,
// so processes on different cores do not share lines.
void SlotProgram::Plan::place_buffers(const std::vector<std::int64_t>& per_node) {
  const std::int64_t stride = static_cast<std::int64_t>((bytes + 7) / 8 * 8);
  std::vector<std::int64_t> base(static_cast<std::size_t>(n) + 1, 0);
  for (Node v = 0; v < n; ++v) base[v + 1] = (base[v] + per_node[v] * stride + 63) / 64 * 64;
  arena_bytes = base[n];
  arena.reset(new std::byte[static_cast<std::size_t>(std::max<std::int64_t>(arena_bytes, 1))]);
  max_receives.assign(static_cast<std::size_t>(n), 0);
  max_sends.assign(static_cast<std::size_t>(n), 0);
  for (Node v = 0; v < n; ++v) {
    auto relocate = [&](std::int64_t& b) { b = base[v] + b * stride; };
    std::int32_t slot = -1, receives = 0, sends = 0;
    for (auto i = op_begin[v]; i < op_begin[v + 1]; ++i) {
      Op& op = ops[i];
      relocate(op.buffer);
      if (op.accumulator >= 0 && !op.send) relocate(op.accumulator);
      if (op.send) op.accumulator = op.accumulator >= 0 ? op.buffer : -1;
      if (op.slot != slot) slot = op.slot, receives = sends = 0;
      max_receives[v] = std::max(max_receives[v], op.send ? receives : ++receives);
      max_sends[v] = std::max(max_sends[v], op.send ? ++sends : sends);
    }
    for (auto i = fill_begin[v]; i < fill_begin[v + 1]; ++i) relocate(fills[i].buffer);
    for (auto i = check_begin[v]; i < check_begin[v + 1]; ++i) relocate(checks[i].buffer);
  }
  slots_run.assign(static_cast<std::size_t>(n), 0);
  verified.assign(static_cast<std::size_t>(n), 0);
}

void SlotProgram::Plan::fill_buffers(Node me) const {
  for (auto i = fill_begin[me]; i < fill_begin[me + 1]; ++i) {
    const Fill& f = fills[i];
    if (f.origin >= 0)
      fill_packet_bytes(buffer(f.buffer), f.packet, f.origin);
    else
      std::fill_n(buffer(f.buffer).data(), bytes, std::byte{0});
  }
}

Task<void> SlotProgram::Plan::run_slots(Communicator c) const {
  const Node me = static_cast<Node>(c.rank());
  Process& process = c.process();
  detail::PooledArray<RecvTicket> receives(static_cast<std::size_t>(max_receives[me]));
  detail::PooledArray<SendTicket> sends(static_cast<std::size_t>(max_sends[me]));
  const Op* op = ops.data() + op_begin[me];
  const Op* const end = ops.data() + op_begin[me + 1];
  while (op < end) {
    const std::int32_t slot = op->slot;
    const Op* const next = std::find_if(op, end, [slot](const Op& o) { return o.slot != slot; });
    std::size_t r = 0, s = 0;
    const Tag tag = static_cast<Tag>(slot);
    for (const Op* o = op; o < next; ++o) {
      if (!o->send) receives.emplace(r++, [&] { return c.post_recv_into(o->peer, buffer(o->buffer), tag); });
    }
    for (const Op* o = op; o < next; ++o) {
      if (o->send) sends.emplace(s++, [&] { return c.post_send(o->peer, buffer(o->buffer), tag); });
    }
    co_await process.wait_all(receives.span().first(r));
    co_await process.wait_all(sends.span().first(s));
    // Combining: what was sent is handed over (emptied) before the partials received join.
    for (const Op* o = op; o < next; ++o) {
      if (o->send && o->accumulator >= 0) std::fill_n(buffer(o->accumulator).data(), bytes, std::byte{0});
    }
    for (const Op* o = op; o < next; ++o) {
      if (!o->send && o->accumulator >= 0) combine_packet_bytes(buffer(o->accumulator), buffer(o->buffer));
    }
    slots_run[me] = slot + 1;
    op = next;
  }
}

void SlotProgram::Plan::verify(Node me) const {
  std::vector<std::byte> expected(bytes), part(bytes);
  std::int64_t checked = 0;
  for (auto i = check_begin[me]; i < check_begin[me + 1]; ++i) {
    const Check& check = checks[i];
    std::fill(expected.begin(), expected.end(), std::byte{0});
    for (Node o : packets.origins(check.packet)) {
      fill_packet_bytes(part, check.packet, o);
      combine_packet_bytes(expected, part);
    }
    const auto got = buffer(check.buffer);
    const auto wrong = std::mismatch(got.begin(), got.end(), expected.begin());
    if (wrong.first != got.end()) {
      throw std::runtime_error("node " + std::to_string(me) + ", packet " + std::to_string(check.packet) + ": byte " +
                               std::to_string(wrong.first - got.begin()) + " is " +
                               std::to_string(static_cast<unsigned>(*wrong.first)) + ", expected " +
                               std::to_string(static_cast<unsigned>(*wrong.second)));
    }
    checked += static_cast<std::int64_t>(bytes);
  }
  verified[me] = checked;
}

Task<void> SlotProgram::run_process(Communicator comm) const {
  if (comm.size() != static_cast<Rank>(plan_->n)) {
    throw InvalidArgument("SlotProgram::run_process: the communicator has " + std::to_string(comm.size()) +
                          " members, the program " + std::to_string(plan_->n) + " processes");
  }
  const Communicator c = comm.library(kSlotMailboxLibrary);
  plan_->fill_buffers(static_cast<Node>(c.rank()));
  co_await plan_->run_slots(c);
  plan_->verify(static_cast<Node>(c.rank()));
}

MailboxRunResult SlotProgram::run(Runtime& runtime, RunOptions options) const {
  const Plan& plan = *plan_;
  runtime.run(
      static_cast<std::uint64_t>(plan.n),
      [&plan](Process& p) -> Task<void> {
        const Communicator c = p.world().library(kSlotMailboxLibrary);
        const Node me = static_cast<Node>(c.rank());
        plan.fill_buffers(me);
        co_await c.barrier();
        const auto start = std::chrono::steady_clock::now();
        co_await plan.run_slots(c);
        co_await c.barrier();
        if (me == 0)
          plan.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        plan.verify(me);
      },
      std::move(options));
  MailboxRunResult result;
  result.wall_ms = plan.wall_ms;
  result.messages = static_cast<std::int64_t>(plan.ops.size()) / 2;
  for (Node v = 0; v < plan.n; ++v) {
    result.slots = std::max(result.slots, plan.slots_run[v]);
    result.bytes_verified += plan.verified[v];
  }
  return result;
}

}  // namespace switchyard::primitives
