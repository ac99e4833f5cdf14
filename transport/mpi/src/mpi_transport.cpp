#include "mpi_world.hpp"

#include "switchyard/errors.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

#include "mpi_check.hpp"
#include "shared_memory_transport.hpp"  // SlotBuffer

namespace switchyard::detail {

namespace {

constexpr int kFailureTag = 1;

// Environment variables that Open MPI's mpirun (ORTE/PMIx), MPICH's Hydra and
// Slurm's PMI set in every process they start.
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

void require_thread_multiple(int provided, const char* who) {
  if (provided >= MPI_THREAD_MULTIPLE) return;
  throw Error(std::string("switchyard: MPI was initialised ") + who + " with thread level " +
              thread_level_name(provided) +
              "; switchyard's workers call MPI concurrently and need MPI_THREAD_MULTIPLE "
              "(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided))");
}

}  // namespace

struct MpiWorld::Impl {
  MPI_Comm packets = MPI_COMM_NULL;  // batches of packets, tag: destination core
  MPI_Comm large_batches = MPI_COMM_NULL;  // batches too large for a pre-posted receive, same tags
  MPI_Comm payloads = MPI_COMM_NULL;  // rendezvous payloads, tag: (sending core, request id)
  MPI_Comm control = MPI_COMM_NULL;  // failures, the end-of-job barrier, allgather
  int tag_ub = 32767;
  std::mutex mutex;  // guards the failure bookkeeping: any worker may announce, the watchdog receives
  std::vector<std::pair<MPI_Request, std::shared_ptr<std::vector<char>>>> failure_sends;
  std::vector<std::pair<std::uint64_t, std::string>> early_failures;  // for a job this node has not reached
  // The end-of-job barrier: started and tested by one worker thread of the job (the last to drain).
  MPI_Request barrier = MPI_REQUEST_NULL;
};

MpiWorld::MpiWorld(std::unique_ptr<Impl> impl, std::uint32_t node, std::uint32_t nodes)
    : impl_(std::move(impl)), node_(node), nodes_(nodes) {}
MpiWorld::~MpiWorld() = default;

MpiWorld* MpiWorld::instance() {
  // Made once, on the first Runtime; kept until exit (the communicators go with MPI_Finalize).
  static MpiWorld* const world = []() -> MpiWorld* {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) throw Error("switchyard: MPI was finalised before the first Runtime was made");
    int provided = 0;
    if (initialized) {
      MPI_Query_thread(&provided);
      require_thread_multiple(provided, "by the program");
    } else {
      if (!launched_by_mpirun()) return nullptr;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      std::atexit([] {
        int done = 0;
        MPI_Finalized(&done);
        if (!done) MPI_Finalize();
      });
      require_thread_multiple(provided, "by switchyard");
    }
    auto impl = std::make_unique<Impl>();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->packets), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->large_batches), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->payloads), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->control), "MPI_Comm_dup");
    int* tag_ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (flag && tag_ub) impl->tag_ub = *tag_ub;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return new MpiWorld(std::move(impl), static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(size));
  }();
  return world;
}

std::vector<std::vector<int>> MpiWorld::allgather(const std::vector<int>& mine) const {
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(nodes_), offsets(nodes_, 0);
  check(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, impl_->control), "MPI_Allgather");
  for (std::uint32_t k = 1; k < nodes_; ++k) offsets[k] = offsets[k - 1] + counts[k - 1];
  std::vector<int> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  check(MPI_Allgatherv(mine.data(), n, MPI_INT, all.data(), counts.data(), offsets.data(), MPI_INT, impl_->control),
        "MPI_Allgatherv");
  std::vector<std::vector<int>> out(nodes_);
  for (std::uint32_t k = 0; k < nodes_; ++k)
    out[k].assign(all.begin() + offsets[k], all.begin() + offsets[k] + counts[k]);
  return out;
}

void MpiWorld::announce_failure(std::uint64_t job, const std::string& text) {
  std::lock_guard lock(impl_->mutex);
  auto& sends = impl_->failure_sends;
  std::erase_if(sends, [](auto& s) {
    int done = 0;
    MPI_Test(&s.first, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  auto buffer = std::make_shared<std::vector<char>>(sizeof job + text.size());
  std::memcpy(buffer->data(), &job, sizeof job);
  std::memcpy(buffer->data() + sizeof job, text.data(), text.size());
  for (std::uint32_t k = 0; k < nodes_; ++k) {
    if (k == node_) continue;
    MPI_Request r;
    // Synchronous: complete once node k has received it (failures_delivered()).
    MPI_Issend(buffer->data(), static_cast<int>(buffer->size()), MPI_CHAR, static_cast<int>(k), kFailureTag,
               impl_->control, &r);
    sends.emplace_back(r, buffer);  // the buffer stays until every send of it completes
  }
}

bool MpiWorld::failures_delivered() {
  std::lock_guard lock(impl_->mutex);
  std::erase_if(impl_->failure_sends, [](auto& s) {
    int done = 0;
    MPI_Test(&s.first, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  return impl_->failure_sends.empty();
}

std::optional<std::string> MpiWorld::failure_from_others(std::uint64_t job) {
  std::lock_guard lock(impl_->mutex);
  auto& early = impl_->early_failures;
  std::erase_if(early, [job](const auto& f) { return f.first < job; });
  // Each announcement once: a cancellation ("") comes before the failure that caused it.
  for (auto it = early.begin(); it != early.end(); ++it) {
    if (it->first != job) continue;
    std::string text = std::move(it->second);
    early.erase(it);
    return text;
  }
  for (;;) {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    MPI_Improbe(MPI_ANY_SOURCE, kFailureTag, impl_->control, &flag, &message, &status);
    if (!flag) return std::nullopt;
    int bytes = 0;
    MPI_Get_count(&status, MPI_CHAR, &bytes);
    std::vector<char> buffer(static_cast<std::size_t>(bytes));
    MPI_Mrecv(buffer.data(), bytes, MPI_CHAR, &message, MPI_STATUS_IGNORE);
    std::uint64_t from_job = 0;
    if (buffer.size() < sizeof from_job) continue;
    std::memcpy(&from_job, buffer.data(), sizeof from_job);
    std::string text(buffer.begin() + sizeof from_job, buffer.end());
    if (from_job == job) return text;
    if (from_job > job) early.emplace_back(from_job, std::move(text));  // a node already in the next job
  }
}

std::uint64_t MpiWorld::begin_job() noexcept {
  // Relaxed: the number only has to be unique; Runtime::run hands it to the
  // job's workers with the job itself (Worker::start's release).
  return jobs_.fetch_add(1, std::memory_order_relaxed);
}

void MpiWorld::start_barrier() { check(MPI_Ibarrier(impl_->control, &impl_->barrier), "MPI_Ibarrier"); }

bool MpiWorld::barrier_done() {
  int done = 0;
  MPI_Test(&impl_->barrier, &done, MPI_STATUS_IGNORE);
  return done != 0;
}

void MpiWorld::abort(int code) const noexcept {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

namespace {

// The first slot of every batch on the wire.
struct BatchHeader {
  std::uint32_t core;  // the sending core, global numbering (RouteTable::global_core)
  std::uint32_t follows;  // 0, or the slots of the batch that follows on large_batches (this one is empty)
  std::uint64_t credit;  // slots the sending core has taken so far from the destination core
};
static_assert(sizeof(BatchHeader) == sizeof(Slot) && std::is_trivially_copyable_v<BatchHeader>,
              "a batch header is one slot");

// A batch of one small eager packet leaves in fewer bytes: this header, then
// the payload unpadded (its size is what is left of the MPI message). Open
// MPI's shared-memory BTL moves a message in 32-byte units after a 24-byte
// header of its own, and each further unit is a further cache line to come
// across half the time: an 8-byte message as a BatchHeader, a WireHeader and
// one payload slot (64 bytes) takes three units, this way (40 bytes) two;
// MPI_Send's own 8 bytes take one. It takes the same slots in the window as
// the packet would in a batch. Used for a lone eager packet (no synchronous
// flag) whose compact batch fits a pre-posted receive.
struct CompactHeader {
  static constexpr std::uint32_t kCompact = 0x8000'0000u;  // in `core`: BatchHeader::core never has it
  std::uint32_t core;  // kCompact | the sending core, global numbering: where BatchHeader::core is
  Tag tag;
  std::uint64_t credit;  // as BatchHeader::credit
  ContextId context;
  Rank src, dst;
};
static_assert(sizeof(CompactHeader) == 2 * sizeof(Slot) && std::is_trivially_copyable_v<CompactHeader>,
              "a compact header is two slots");

class MpiTransport final : public NetworkTransport {
 public:
  void attach(NetworkJob& job, const RouteTable& routes, std::uint32_t core, std::uint64_t window_slots,
              PayloadSink& sink) override;
  void detach() override;
  void finishing() override;
  bool end_job() override;

  std::uint64_t post(const Route& to, const WireHeader& header, std::span<const std::byte> payload) override;
  bool accepted(const Route& to, std::uint64_t seq) const override {
    return seq <= out_[routes_->global_core(to)].taken + window_;
  }
  // Nothing more than post() does: a packet towards a core with no batch in
  // MPI's hands has left already; one behind a batch in flight joins the next
  // batch, which leaves once MPI has taken that one (flush).
  bool publish(const Route&) override { return false; }
  bool flush() override;
  bool poll(ArrivalSink& sink) override;
  bool has_arrivals() const override;
  bool has_backlog() const override { return staged_ || has_requests(); }
  bool has_staged() const override { return staged_; }
  const TransportStats& stats() const override { return stats_; }

  void send_payload(const Route& to, SendState& s) override;
  void receive_payload(const Route& from, RequestId request, RecvState& r, std::byte* into,
                       std::uint64_t size) override;
  bool has_requests() const override {
    return !payload_requests_.empty() || batches_in_flight_ > 0 || uncredited_outboxes_ > 0;
  }

 private:
  struct Batch {
    MPI_Request request = MPI_REQUEST_NULL;
    SlotBuffer slots;
  };
  // This core's traffic with one core of another node (owner-private): the
  // packets towards it, and the credits owed to it for the slots it sent.
  struct Outbox {
    int node = -1;  // -1: a core of this node (the shared-memory transport's)
    int tag = 0;  // the destination core and the job's parity
    SlotBuffer staged;  // a BatchHeader slot, then the packets, once anything is staged
    std::uint64_t posted = 0;  // packet slots posted so far: a packet's sequence number is its last slot's
    std::uint64_t sent = 0;  // packet slots issued in batches
    std::uint64_t taken = 0;  // packet slots the destination has credited
    std::uint64_t received = 0;  // packet slots taken from that core
    std::uint64_t credited = 0;  // `received` as last sent back to it
    // Batches whose MPI_Isend is not complete, oldest first, in a ring of
    // fixed size: their buffers are reused, so a steady stream allocates nothing.
    std::array<Batch, kMaxBatchesInFlight> in_flight;
    std::size_t first = 0, count = 0;
  };
  struct PayloadOp {
    SendState* send = nullptr;  // one of the two
    RecvState* recv = nullptr;
  };

  bool owes_credit(const Outbox& out) const {
    return out.received - out.credited >= (finishing_ ? 1 : credit_threshold_);
  }
  bool issue(Outbox& out);
  Batch& next_batch(Outbox& out) { return out.in_flight[(out.first + out.count) % kMaxBatchesInFlight]; }
  // Every packet posted towards out's core is in a batch now.
  void mark_sent(Outbox& out) {
    if (out.sent == out.taken) ++uncredited_outboxes_;
    out.sent = out.posted;
  }
  void send_batch(Outbox& out, Batch& b, std::uint32_t follows, MPI_Comm comm);
  void send_compact(Outbox& out, const WireHeader& h, std::span<const std::byte> payload);
  void start_send(Outbox& out, Batch& b, std::size_t bytes, MPI_Comm comm);
  void post_receives();
  void cancel_receives();
  bool complete_batches(Outbox& out);
  bool complete_payloads();
  void take_batch(ArrivalSink& sink, const Slot* batch, std::size_t slots);
  void take_compact(ArrivalSink& sink, const Slot* batch, std::size_t bytes);
  // A batch's credit, and the packet slots it brought from core `core`.
  void take_credit(std::uint32_t core, std::uint64_t credit, std::uint64_t slots);
  int payload_tag(std::uint32_t core, RequestId request) const;

  MpiWorld::Impl* world_ = nullptr;
  MpiJob* job_ = nullptr;
  bool drained_ = false;  // counted in the job's drained workers (end_job)
  bool barrier_owner_ = false;  // started the end-of-job barrier, so tests it
  const RouteTable* routes_ = nullptr;
  PayloadSink* sink_ = nullptr;
  std::uint32_t core_ = 0, global_core_ = 0;
  int packet_tag_ = 0;  // this core's packets, in this job
  std::uint64_t window_ = 0;
  std::uint64_t credit_threshold_ = 1;  // half the window: uncredited slots that make a header-only batch worth it
  bool finishing_ = false;
  int core_bits_ = 0;  // a payload tag is (request id << core_bits_) | sending core
  std::vector<Outbox> out_;  // by global core
  std::vector<std::uint32_t> remote_;  // the global cores of other nodes
  // Receives of batches, pre-posted (persistent, MPI_Recv_init) so that a
  // batch is matched and copied as it arrives: one MPI_Test takes it. MPI
  // matches them in the order they were started, so the oldest is tested
  // first and restarted once its batch is taken in: batches keep their order.
  // The restart waits for the end of the round that ran the batch's
  // processes (MPI_Start matches against MPI's unexpected messages under
  // its lock: a reply need not wait for it), and comes at the latest before
  // the next receive is tested, so at most one receive waits for it and
  // they restart in the order their batches came.
  static constexpr std::size_t kPostedReceives = 4;
  static constexpr std::size_t kCompactPayloadBytes = kPostedBatchSlots * sizeof(Slot) - sizeof(CompactHeader);
  std::array<MPI_Request, kPostedReceives> receives_{};
  std::array<SlotBuffer, kPostedReceives> receive_buffers_;
  std::size_t oldest_receive_ = 0;
  MPI_Request* unstarted_ = nullptr;  // a receive whose batch was taken in, not restarted yet
  void restart_receive() {
    if (!unstarted_) return;
    check(MPI_Start(unstarted_), "MPI_Start");
    unstarted_ = nullptr;
  }
  SlotBuffer inbox_;  // a batch too large for a pre-posted receive
  std::vector<MPI_Request> payload_requests_;
  std::vector<PayloadOp> payload_ops_;  // beside payload_requests_
  std::vector<int> completed_;  // MPI_Testsome's indices
  std::size_t batches_in_flight_ = 0;
  std::size_t uncredited_outboxes_ = 0;  // outboxes with sent != taken
  std::vector<SlotBuffer> abandoned_;  // batches a failed job left in MPI's hands
  bool staged_ = false;  // packets staged, or credits owed
  TransportStats stats_;
};

void MpiTransport::attach(NetworkJob& network_job, const RouteTable& routes, std::uint32_t core,
                          std::uint64_t window_slots, PayloadSink& sink) {
  // Made by the MpiSession that made this transport (the runtime pairs them).
  job_ = &static_cast<MpiJob&>(network_job);
  MpiWorld& world = job_->world();
  const std::uint64_t job = job_->number();
  world_ = &world.impl();
  drained_ = barrier_owner_ = false;
  routes_ = &routes;
  sink_ = &sink;
  core_ = core;
  global_core_ = routes.global_core(Route{world.node(), core, 0});
  packet_tag_ = static_cast<int>(2 * core + (job & 1));
  window_ = window_slots;
  credit_threshold_ = std::max<std::uint64_t>(1, window_slots / 2);
  finishing_ = false;
  stats_ = {};
  std::uint32_t widest = 1;
  for (std::uint32_t k = 0; k < routes.nodes(); ++k) widest = std::max(widest, routes.cores_on(k));
  core_bits_ = static_cast<int>(std::bit_width(widest - 1));
  out_.resize(routes.global_cores());
  remote_.clear();
  for (std::uint32_t g = 0; g < routes.global_cores(); ++g) {
    const Route to = routes.core_route(g);
    Outbox& out = out_[g];
    out.staged.clear();
    out.posted = out.sent = out.taken = out.received = out.credited = 0;
    out.first = out.count = 0;
    out.node = to.node == world.node() ? -1 : static_cast<int>(to.node);
    out.tag = static_cast<int>(2 * to.core + (job & 1));
    if (out.node >= 0) remote_.push_back(g);
  }
  batches_in_flight_ = uncredited_outboxes_ = 0;
  staged_ = false;
  post_receives();
}

void MpiTransport::post_receives() {
  for (std::size_t i = 0; i < kPostedReceives; ++i) {
    SlotBuffer& buffer = receive_buffers_[i];
    if (buffer.empty()) buffer.extend(kPostedBatchSlots);  // once: the buffers outlive the jobs
    check(MPI_Recv_init(buffer.data(), static_cast<int>(kPostedBatchSlots * sizeof(Slot)), MPI_BYTE, MPI_ANY_SOURCE,
                        packet_tag_, world_->packets, &receives_[i]),
          "MPI_Recv_init");
    check(MPI_Start(&receives_[i]), "MPI_Start");
  }
  oldest_receive_ = 0;
}

// The job is over on every node (or failed): nothing more comes for these receives.
void MpiTransport::cancel_receives() {
  restart_receive();  // every receive active, so that each is cancelled alike
  for (MPI_Request& r : receives_) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
  }
}

void MpiTransport::detach() {
  // A job that ended normally left nothing here but batches already received
  // (the end-of-job barrier comes after every batch was credited) whose
  // MPI_Isend a last test completes. After a failure that could not drain,
  // requests are let go: MPI finishes them on its own, and the batches'
  // buffers are kept (never reused) since MPI may still read them.
  for (MPI_Request& r : payload_requests_) MPI_Request_free(&r);
  payload_requests_.clear();
  payload_ops_.clear();
  for (std::uint32_t g : remote_) {
    Outbox& out = out_[g];
    for (; out.count > 0; --out.count, out.first = (out.first + 1) % kMaxBatchesInFlight) {
      Batch& b = out.in_flight[out.first];
      int done = 0;
      MPI_Test(&b.request, &done, MPI_STATUS_IGNORE);
      if (done) continue;
      MPI_Request_free(&b.request);
      abandoned_.push_back(std::move(b.slots));
      b.slots = SlotBuffer{};
    }
  }
  batches_in_flight_ = uncredited_outboxes_ = 0;
  cancel_receives();
  world_ = nullptr;
  job_ = nullptr;
  routes_ = nullptr;
  sink_ = nullptr;
}

void MpiTransport::finishing() {
  if (finishing_) return;
  finishing_ = true;
  for (std::uint32_t g : remote_) staged_ |= owes_credit(out_[g]);
}

// The last worker of the node to drain starts an MPI barrier over the nodes
// (MpiJob::worker_drained). Once every node is in it, every batch of the job
// has been credited and every payload moved. (A node that has left the
// barrier may start the next job and send before this one has left: the
// job's parity in the packets' tags keeps them apart, mpi_world.hpp.)
bool MpiTransport::end_job() {
  finishing();
  if (!drained_ && !has_requests() && !staged_ && job_->world().failures_delivered()) {
    drained_ = true;
    barrier_owner_ = job_->worker_drained();
  }
  if (barrier_owner_ && job_->barrier_done()) barrier_owner_ = false;
  return job_->finished();
}

std::uint64_t MpiTransport::post(const Route& to, const WireHeader& header, std::span<const std::byte> payload) {
  Outbox& out = out_[routes_->global_core(to)];
  // A packet towards a core with no batch in MPI's hands leaves at once
  // rather than at the end of the round: the round's further packets towards
  // that core, if any, find this batch in flight and go together at the flush.
  const bool lone = out.staged.empty() && out.count == 0;
  if (lone && header.kind == WireKind::kEager && header.flags == 0 && payload.size() <= kCompactPayloadBytes &&
      out.sent - out.taken < window_) {
    out.posted += packet_slots(payload.size());
    send_compact(out, header, payload);
    return out.posted;
  }
  if (out.staged.empty()) out.staged.extend(1);  // the BatchHeader, written when the batch leaves
  out.posted += out.staged.append_packet(header, payload);
  staged_ = true;
  if (lone || out.staged.size() >= kAutoFlushSlots) issue(out);
  return out.posted;
}

// Sends the outbox's staged packets as one batch if the window allows, or
// else a header-only batch if a credit is owed; at most kMaxBatchesInFlight
// batches are in MPI's hands.
// A batch larger than a pre-posted receive goes on large_batches, after an
// empty batch on packets that announces it (two ring places).
bool MpiTransport::issue(Outbox& out) {
  if (out.count == kMaxBatchesInFlight) return false;
  const bool large = out.staged.size() > kPostedBatchSlots;
  if (!out.staged.empty() && out.sent - out.taken < window_ && (!large || out.count + 2 <= kMaxBatchesInFlight)) {
    const auto slots = static_cast<std::uint32_t>(to_int_count(out.staged.size(), "a batch of packets"));
    if (large) {
      Batch& announce = next_batch(out);
      announce.slots.clear();
      announce.slots.extend(1);
      send_batch(out, announce, slots, world_->packets);
    }
    Batch& b = next_batch(out);
    b.slots.clear();
    std::swap(b.slots, out.staged);  // the batch's old buffer becomes the staging one: both keep their capacity
    mark_sent(out);
    send_batch(out, b, 0, large ? world_->large_batches : world_->packets);
  } else if (owes_credit(out)) {
    Batch& b = next_batch(out);
    b.slots.clear();
    b.slots.extend(1);
    send_batch(out, b, 0, world_->packets);
  } else {
    return false;
  }
  return true;
}

void MpiTransport::send_batch(Outbox& out, Batch& b, std::uint32_t follows, MPI_Comm comm) {
  const BatchHeader header{global_core_, follows, out.received};
  std::memcpy(b.slots.data(), &header, sizeof header);
  start_send(out, b, b.slots.size() * sizeof(Slot), comm);
}

void MpiTransport::send_compact(Outbox& out, const WireHeader& h, std::span<const std::byte> payload) {
  Batch& b = next_batch(out);
  b.slots.clear();
  auto* at = reinterpret_cast<std::byte*>(b.slots.extend(payload_slots(sizeof(CompactHeader) + payload.size())));
  const CompactHeader header{CompactHeader::kCompact | global_core_, h.tag, out.received, h.context, h.src, h.dst};
  std::memcpy(at, &header, sizeof header);
  if (!payload.empty()) std::memcpy(at + sizeof header, payload.data(), payload.size());
  mark_sent(out);
  start_send(out, b, sizeof header + payload.size(), world_->packets);
}

// The batch's first bytes of b leave, carrying out's credit.
void MpiTransport::start_send(Outbox& out, Batch& b, std::size_t bytes, MPI_Comm comm) {
  out.credited = out.received;
  check(MPI_Isend(b.slots.data(), to_int_count(bytes, "a batch of packets"), MPI_BYTE, out.node, out.tag, comm,
                  &b.request),
        "MPI_Isend");
  ++out.count;
  ++batches_in_flight_;
}

bool MpiTransport::complete_batches(Outbox& out) {
  bool any = false;
  while (out.count > 0) {
    Batch& b = out.in_flight[out.first];
    int done = 0;
    MPI_Test(&b.request, &done, MPI_STATUS_IGNORE);
    if (!done) break;
    out.first = (out.first + 1) % kMaxBatchesInFlight;
    --out.count;
    --batches_in_flight_;
    any = true;
  }
  return any;
}

bool MpiTransport::flush() {
  restart_receive();
  if (!staged_ && batches_in_flight_ == 0) return false;
  bool moved = false, left = false;
  for (std::uint32_t g : remote_) {
    Outbox& out = out_[g];
    if (out.count > 0) moved |= complete_batches(out);
    moved |= issue(out);
    left |= !out.staged.empty() || owes_credit(out);
  }
  staged_ = left;
  return moved;
}

bool MpiTransport::complete_payloads() {
  const int n = static_cast<int>(payload_requests_.size());
  completed_.resize(payload_requests_.size());
  int done = 0;
  check(MPI_Testsome(n, payload_requests_.data(), &done, completed_.data(), MPI_STATUSES_IGNORE), "MPI_Testsome");
  if (done <= 0) return false;  // 0, or MPI_UNDEFINED when no request was active
  // Completed requests are MPI_REQUEST_NULL now: close the gaps, keeping the
  // order, then tell the endpoint (which may post new payloads meanwhile).
  std::size_t keep = 0;
  for (std::size_t i = 0; i < payload_requests_.size(); ++i) {
    if (payload_requests_[i] == MPI_REQUEST_NULL) continue;
    payload_requests_[keep] = payload_requests_[i];
    std::swap(payload_ops_[keep], payload_ops_[i]);
    ++keep;
  }
  // The completed ops are now in [keep, size), in some order; each is reported once.
  const std::size_t total = payload_ops_.size();
  payload_requests_.resize(keep);
  for (std::size_t i = keep; i < total; ++i) {
    const PayloadOp op = payload_ops_[i];
    if (op.send) {
      sink_->payload_sent(*op.send);
    } else {
      sink_->payload_received(*op.recv);
    }
  }
  payload_ops_.erase(payload_ops_.begin() + static_cast<std::ptrdiff_t>(keep),
                     payload_ops_.begin() + static_cast<std::ptrdiff_t>(total));
  return true;
}

// One batch per call: testing the next receive at once would put another
// pass of MPI's progress engine between this batch and its processes (the
// worker polls again right after the round).
bool MpiTransport::poll(ArrivalSink& sink) {
  restart_receive();
  const bool payloads = !payload_requests_.empty() && complete_payloads();
  MPI_Request& receive = receives_[oldest_receive_];
  int flag = 0;
  MPI_Status status;
  check(MPI_Test(&receive, &flag, &status), "MPI_Test");
  if (!flag) return payloads;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  const Slot* batch = receive_buffers_[oldest_receive_].data();
  BatchHeader header;
  std::memcpy(&header, batch, sizeof header);
  if (header.core & CompactHeader::kCompact) {
    take_compact(sink, batch, static_cast<std::size_t>(bytes));
  } else if (header.follows > 0) {
    // Announced: already sent on large_batches, so this receive is short.
    inbox_.clear();
    Slot* large = inbox_.extend(header.follows);
    check(MPI_Recv(large, static_cast<int>(header.follows * sizeof(Slot)), MPI_BYTE, status.MPI_SOURCE, packet_tag_,
                   world_->large_batches, MPI_STATUS_IGNORE),
          "MPI_Recv");
    take_batch(sink, large, header.follows);
  } else {
    take_batch(sink, batch, static_cast<std::size_t>(bytes) / sizeof(Slot));
  }
  unstarted_ = &receive;
  oldest_receive_ = (oldest_receive_ + 1) % kPostedReceives;
  return true;
}

// A batch from another node: its credit, then its packets, in order.
void MpiTransport::take_batch(ArrivalSink& sink, const Slot* batch, std::size_t slots) {
  BatchHeader header;
  std::memcpy(&header, batch, sizeof header);
  take_credit(header.core, header.credit, slots - 1);
  for (std::size_t i = 1; i < slots;) {
    WireHeader h;
    std::memcpy(&h, batch + i, sizeof h);
    const std::uint64_t payload = wire_payload_bytes(h);
    sink.arrived(h, {reinterpret_cast<const std::byte*>(batch + i + kHeaderSlots), static_cast<std::size_t>(payload)});
    i += packet_slots(payload);
  }
}

void MpiTransport::take_compact(ArrivalSink& sink, const Slot* batch, std::size_t bytes) {
  CompactHeader c;
  std::memcpy(&c, batch, sizeof c);
  WireHeader h{};
  h.kind = WireKind::kEager;
  h.context = c.context;
  h.src = c.src;
  h.dst = c.dst;
  h.tag = c.tag;
  h.size = bytes - sizeof c;
  take_credit(c.core & ~CompactHeader::kCompact, c.credit, packet_slots(h.size));
  sink.arrived(h, {reinterpret_cast<const std::byte*>(batch) + sizeof c, static_cast<std::size_t>(h.size)});
}

void MpiTransport::take_credit(std::uint32_t core, std::uint64_t credit, std::uint64_t slots) {
  Outbox& peer = out_[core];
  if (credit > peer.taken) {
    peer.taken = credit;
    if (peer.taken == peer.sent) --uncredited_outboxes_;
  }
  peer.received += slots;
  staged_ |= owes_credit(peer);
  stats_.slots_received += slots;
}

bool MpiTransport::has_arrivals() const {
  int flag = 0;
  MPI_Request_get_status(receives_[oldest_receive_], &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

int MpiTransport::payload_tag(std::uint32_t core, RequestId request) const {
  const std::uint64_t tag = (std::uint64_t{request} << core_bits_) | core;
  if (tag > static_cast<std::uint64_t>(world_->tag_ub)) {
    throw Error("switchyard: more rendezvous messages in flight from one core to other nodes than MPI_TAG_UB (" +
                std::to_string(world_->tag_ub) + ") can number");
  }
  return static_cast<int>(tag);
}

void MpiTransport::send_payload(const Route& to, SendState& s) {
  const int bytes = to_int_count(s.size, "a message");
  const int tag = payload_tag(core_, s.id);
  MPI_Request r;
  check(MPI_Issend(s.data, bytes, MPI_BYTE, static_cast<int>(to.node), tag, world_->payloads, &r), "MPI_Issend");
  payload_requests_.push_back(r);
  payload_ops_.push_back(PayloadOp{&s, nullptr});
}

void MpiTransport::receive_payload(const Route& from, RequestId request, RecvState& r, std::byte* into,
                                   std::uint64_t size) {
  const int bytes = to_int_count(size, "a message");
  MPI_Request req;
  check(MPI_Irecv(into, bytes, MPI_BYTE, static_cast<int>(from.node), payload_tag(from.core, request), world_->payloads,
                  &req),
        "MPI_Irecv");
  payload_requests_.push_back(req);
  payload_ops_.push_back(PayloadOp{nullptr, &r});
}

}  // namespace

std::unique_ptr<NetworkTransport> make_mpi_transport() { return std::make_unique<MpiTransport>(); }

}  // namespace switchyard::detail
