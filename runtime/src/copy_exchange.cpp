#include "switchyard/copy_exchange.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "switchyard/detail/group.hpp"
#include "switchyard/detail/job.hpp"
#include "switchyard/detail/worker.hpp"
#include "switchyard/errors.hpp"
#include "switchyard/splitmix64.hpp"


namespace switchyard::detail {

namespace {

constexpr std::uint32_t kNoCore = ~std::uint32_t{0};

// A member's publication. Written by the member's process (on its core's
// thread) before its core's copier stores `published`; read by other cores
// after they acquire that store.
struct alignas(64) CopyMemberSlot {
  const std::span<const std::byte>* send = nullptr;
  const std::span<std::byte>* recv = nullptr;
  const CopyMember* part = nullptr;
  std::uint64_t runs = 0;       // this member's runs in the job: the run number it is in
  std::uint64_t inquiries = 0;  // busy_locks: test-and-sets for its messages in this run (its core's copier counts)
};

// Written by its core's copier alone, read by every core of the node.
struct alignas(64) CopyCoreProgress {
  // The last run whose regions this core's participants have all published.
  // Release by the copier after its members' slots are written; acquire by
  // the cores that copy out of or into them (Worker::watch or a direct load).
  std::atomic<std::uint64_t> published{0};
  // The last run whose steps this core has all copied. Release after the
  // copies; acquire by the cores whose members' regions they read or wrote,
  // before those members' runs complete.
  std::atomic<std::uint64_t> copied{0};
  // strict_phases: phases this core has copied over the job's runs,
  // (run - 1) * phases + phase + 1; the same release/acquire pairing.
  std::atomic<std::uint64_t> phases_done{0};
};
static_assert(sizeof(CopyCoreProgress) == 64, "one cache line per core's progress");

// Consecutive steps of a core's program with one core at their other end (and,
// in the phase orders, one phase).
struct CopyBlock {
  std::uint32_t peer_core = 0;
  std::uint32_t phase = 0;
  std::size_t begin = 0, end = 0;
};

// A core's share of the exchange: touched by that core's thread alone.
struct CopyCoreProgram {
  std::uint32_t participants = 0, arrived = 0;
  std::uint64_t done = 0;  // the last run this core has completed: its participants may return
  bool compiled = false;
  std::vector<Process*> members;  // the participants on this core
  std::vector<CopyStep> steps;    // the program, in order
  std::vector<std::uint32_t> step_core;  // per step: the core at its other end
  std::vector<CopyBlock> blocks;
  std::vector<std::uint32_t> sources;  // cores this program copies out of or into
  std::vector<std::uint32_t> readers;  // cores that copy out of or into this core's members
  std::vector<std::uint32_t> others;   // strict_phases: every other core with participants
  std::vector<std::size_t> deferred;   // any: blocks whose peer had not published, per run
  // busy_locks: per sender (a member of this core with steps), its steps'
  // range in `steps` and, per run, its pending steps in `pending`.
  struct Sender {
    Rank rank = 0;
    std::size_t begin = 0, end = 0, left = 0;
  };
  std::vector<Sender> senders;
  std::vector<std::uint32_t> pending;
};

class CopyExchangeState final : public GroupAttachment {
 public:
  CopyExchangeState(Rank participants, std::uint32_t workers, const CopyExchangeOptions& options)
      : participants_(participants),
        options_(options),
        slots_(std::make_unique<CopyMemberSlot[]>(participants)),
        progress_(std::make_unique<CopyCoreProgress[]>(workers)),
        programs_(workers) {}

  Rank participants() const noexcept { return participants_; }
  const CopyExchangeOptions& options() const noexcept { return options_; }
  CopyMemberSlot& slot(Rank r) noexcept { return slots_[r]; }
  CopyCoreProgress& progress(std::uint32_t core) noexcept { return progress_[core]; }
  CopyCoreProgram& program(std::uint32_t core) noexcept { return programs_[core]; }
  std::uint32_t cores() const noexcept { return static_cast<std::uint32_t>(programs_.size()); }

 private:
  const Rank participants_;
  const CopyExchangeOptions options_;
  std::unique_ptr<CopyMemberSlot[]> slots_;      // by comm rank
  std::unique_ptr<CopyCoreProgress[]> progress_;  // by worker
  std::vector<CopyCoreProgram> programs_;         // by worker
};

[[noreturn, gnu::cold]] void refuse(Rank me, const std::string& why) {
  throw InvalidArgument("switchyard: compiled exchange on rank " + std::to_string(me) + ": " + why);
}

void add_unique(std::vector<std::uint32_t>& cores, std::uint32_t core) {
  if (std::find(cores.begin(), cores.end(), core) == cores.end()) cores.push_back(core);
}

}  // namespace

// The runtime's side of run_copy_exchange: it reaches the processes, workers
// and groups of the job (friend of Process and Communicator).
struct CopyEngine {
  static Task<CopyRunStats> run(Communicator comm, std::uint64_t key, Rank participants, const CopyMember* mine,
                                CopyRegions regions, CopyExchangeOptions options);

 private:
  // Waits, parked, until `word` reaches `target` (Worker::watch).
  class WatchAwaiter {
   public:
    WatchAwaiter(Process& p, const std::atomic<std::uint64_t>& word, std::uint64_t target, const char* what) noexcept
        : p_(p), word_(word), target_(target), what_(what) {}
    bool await_ready() const noexcept { return word_.load(std::memory_order_acquire) >= target_; }
    void await_suspend(std::coroutine_handle<> h) noexcept {
      p_.worker_.watch(word_, target_, done_, p_);
      p_.suspend_until(h, &done_, what_, kAnySource);
    }
    void await_resume() const { p_.resumed(); }

   private:
    Process& p_;
    const std::atomic<std::uint64_t>& word_;
    std::uint64_t target_;
    const char* what_;
    bool done_ = false;
  };

  static CopyExchangeState& state_of(Process& p, const Group& g, std::uint64_t key, Rank participants,
                                     const CopyExchangeOptions& options);
  static void compile(CopyExchangeState& s, const Group& g, Process& p, std::uint32_t core);
  static void compile_senders(CopyCoreProgram& prog);
  static void ring(Process& p, std::span<const std::uint32_t> cores) {
    for (std::uint32_t c : cores) p.job_.worker(c).doorbell().ring();
  }
  static void copy(CopyExchangeState& s, const CopyCoreProgram& prog, const CopyBlock& b) {
    for (std::size_t i = b.begin; i < b.end; ++i) copy_step(s, prog.steps[i]);
  }
  static void copy_step(CopyExchangeState& s, const CopyStep& st) {
    const CopyMemberSlot& from = s.slot(st.src);
    const CopyMemberSlot& to = s.slot(st.dst);
    std::memcpy(to.recv[st.dst_region].data() + st.dst_offset, from.send[st.src_region].data() + st.src_offset,
                st.bytes);
  }
  static Task<void> copy_any(CopyExchangeState& s, Process& p, std::uint32_t core, std::uint64_t run);
  static Task<void> copy_phases(CopyExchangeState& s, Process& p, std::uint32_t core, std::uint64_t run);
  static Task<void> copy_strict(CopyExchangeState& s, Process& p, std::uint32_t core, std::uint64_t run);
  static Task<void> copy_with_busy_locks(CopyExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                         std::uint64_t run);
  static std::size_t busy_lock_pass(CopyExchangeState& s, const Group& g, CopyCoreProgram::Sender& sender,
                             CopyCoreProgram& prog, std::uint64_t run, std::uint32_t& unpublished);
};

CopyExchangeState& CopyEngine::state_of(Process& p, const Group& g, std::uint64_t key, Rank participants,
                                        const CopyExchangeOptions& options) {
  Job& job = p.job_;
  GroupAttachment& a = g.attachment(key, [&] {
    auto s = std::make_unique<CopyExchangeState>(participants, job.worker_count(), options);
    const Membership& members = g.members();
    for (std::uint32_t w = 0; w < job.worker_count(); ++w) {
      const std::uint32_t global = job.routes().global_core(Route{job.node(), w, 0});
      CopyCoreProgram& prog = s->program(w);
      for (Process* q : members.local[global]) {
        if (members.to_comm(q->rank()) < participants) prog.members.push_back(q);
      }
      prog.participants = static_cast<std::uint32_t>(prog.members.size());
    }
    return s;
  });
  auto& s = static_cast<CopyExchangeState&>(a);
  const CopyExchangeOptions& first = s.options();
  if (s.participants() != participants || first.side != options.side || first.order != options.order ||
      first.phases != options.phases) {
    refuse(g.members().to_comm(p.rank()),
           "exchange " + std::to_string(key) + " was first run with other options or participants");
  }
  return s;
}

// The core's program from its participants' steps, once all have published
// them (its first run in the job).
void CopyEngine::compile(CopyExchangeState& s, const Group& g, Process& p, std::uint32_t core) {
  CopyCoreProgram& prog = s.program(core);
  const Job& job = p.job_;
  const Membership& members = g.members();
  const bool pull = s.options().side == CopySide::receiver;
  auto core_of = [&](Rank r, Rank me) {
    if (r >= s.participants()) refuse(me, "a step names rank " + std::to_string(r) + ", not a participant");
    const Route& route = job.routes()[members.to_job(r)];
    if (route.node != job.node()) {
      refuse(me, "a step with rank " + std::to_string(r) + ", which lives on another node (node " +
                     std::to_string(route.node) + ")");
    }
    return route.core;
  };
  for (Process* q : prog.members) {
    const Rank me = members.to_comm(q->rank());
    const CopyMember& part = *s.slot(me).part;
    for (const CopyStep& st : pull ? part.incoming : part.outgoing) {
      if ((pull ? st.dst : st.src) != me) refuse(me, "a step of another member in its own list");
      const std::uint32_t other = core_of(pull ? st.src : st.dst, me);
      if (st.bytes == 0) continue;  // nothing to copy; its hooks still run
      prog.steps.push_back(st);
      prog.step_core.push_back(other);
      if (other != core) add_unique(prog.sources, other);
    }
    for (const CopyStep& st : pull ? part.outgoing : part.incoming) {
      const std::uint32_t other = core_of(pull ? st.dst : st.src, me);
      if (st.bytes != 0 && other != core) add_unique(prog.readers, other);
    }
  }
  // The order: a permutation of the steps, applied to both arrays.
  std::vector<std::size_t> order(prog.steps.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const CopyOrder o = s.options().order;
  auto key = [&](std::size_t i) {
    const std::uint64_t peer = prog.step_core[i] == core ? 0 : prog.step_core[i] + 1;  // own core's first
    if (o == CopyOrder::any) return peer;
    if (o == CopyOrder::busy_locks) return std::uint64_t{0};  // per sender, in the members' order
    return (std::uint64_t{prog.steps[i].phase} << 32) | peer;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<CopyStep> steps(order.size());
  std::vector<std::uint32_t> cores(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    steps[i] = prog.steps[order[i]];
    cores[i] = prog.step_core[order[i]];
    if (o == CopyOrder::strict_phases && steps[i].phase >= s.options().phases) {
      refuse(steps[i].dst, "a step of phase " + std::to_string(steps[i].phase) + " in an exchange of " +
                               std::to_string(s.options().phases) + " phases");
    }
  }
  prog.steps = std::move(steps);
  prog.step_core = std::move(cores);
  for (std::size_t i = 0; i < prog.steps.size(); ++i) {
    const bool by_phase = o == CopyOrder::phases || o == CopyOrder::strict_phases;
    if (prog.blocks.empty() || prog.blocks.back().peer_core != prog.step_core[i] ||
        (by_phase && prog.blocks.back().phase != prog.steps[i].phase)) {
      prog.blocks.push_back(CopyBlock{prog.step_core[i], prog.steps[i].phase, i, i});
    }
    prog.blocks.back().end = i + 1;
  }
  prog.deferred.reserve(prog.blocks.size());
  for (std::uint32_t w = 0; w < s.cores(); ++w) {
    if (w != core && s.program(w).participants > 0) prog.others.push_back(w);
  }
  if (o == CopyOrder::busy_locks) compile_senders(prog);
  prog.compiled = true;
}

void CopyEngine::compile_senders(CopyCoreProgram& prog) {
  for (std::size_t i = 0; i < prog.steps.size(); ++i) {
    if (prog.senders.empty() || prog.senders.back().rank != prog.steps[i].src) {
      prog.senders.push_back(CopyCoreProgram::Sender{prog.steps[i].src, i, i, 0});
    }
    prog.senders.back().end = i + 1;
  }
  prog.pending.resize(prog.steps.size());
}

Task<CopyRunStats> CopyEngine::run(Communicator comm, std::uint64_t key, Rank participants, const CopyMember* mine,
                                   CopyRegions regions, CopyExchangeOptions options) {
  Process& p = comm.process();
  p.check_cancelled();
  const Group& g = comm.group();
  const Rank me = comm.rank();
  if (me >= participants) refuse(me, "not one of the exchange's " + std::to_string(participants) + " participants");
  if (options.order == CopyOrder::busy_locks && options.side != CopySide::sender) {
    refuse(me, "busy locks are held by senders: busy_locks needs CopySide::sender");
  }
  CopyExchangeState& s = state_of(p, g, key, participants, options);
  CopyMemberSlot& slot = s.slot(me);
  slot.send = regions.send.data();
  slot.recv = regions.recv.data();
  slot.part = mine;
  slot.inquiries = 0;
  const std::uint64_t run = ++slot.runs;
  const std::uint32_t core = p.worker_.index();
  CopyCoreProgram& prog = s.program(core);
  if (++prog.arrived < prog.participants) {
    while (prog.done < run) co_await p.park("the copies of its compiled exchange");
    co_return CopyRunStats{slot.inquiries};
  }
  // The last participant of this core: the copier.
  prog.arrived = 0;  // nobody here arrives again before `done` says this run is over
  if (!prog.compiled) compile(s, g, p, core);
  CopyCoreProgress& mine_done = s.progress(core);
  mine_done.published.store(run, std::memory_order_release);  // pairs with the acquires of the cores in `readers`
  ring(p, prog.readers);
  switch (s.options().order) {
    case CopyOrder::any: co_await copy_any(s, p, core, run); break;
    case CopyOrder::phases: co_await copy_phases(s, p, core, run); break;
    case CopyOrder::strict_phases: co_await copy_strict(s, p, core, run); break;
    case CopyOrder::busy_locks: co_await copy_with_busy_locks(s, g, p, core, run); break;
  }
  mine_done.copied.store(run, std::memory_order_release);  // pairs with the acquires of the cores in `sources`
  ring(p, prog.sources);
  for (std::uint32_t c : prog.readers) {
    co_await WatchAwaiter(p, s.progress(c).copied, run, "the copies of another core in its compiled exchange");
  }
  prog.done = run;
  for (Process* q : prog.members) q->notify();  // the copier itself is running: notify() passes it by
  co_return CopyRunStats{slot.inquiries};
}

// AC: the blocks whose peer has published first, then the others as their
// peers publish.
Task<void> CopyEngine::copy_any(CopyExchangeState& s, Process& p, std::uint32_t core, std::uint64_t run) {
  CopyCoreProgram& prog = s.program(core);
  prog.deferred.clear();  // capacity kept: no allocation after the first run
  for (std::size_t b = 0; b < prog.blocks.size(); ++b) {
    const CopyBlock& block = prog.blocks[b];
    if (block.peer_core == core || s.progress(block.peer_core).published.load(std::memory_order_acquire) >= run) {
      copy(s, prog, block);
    } else {
      prog.deferred.push_back(b);
    }
  }
  for (std::size_t b : prog.deferred) {
    const CopyBlock& block = prog.blocks[b];
    co_await WatchAwaiter(p, s.progress(block.peer_core).published, run, "another core's buffers (compiled exchange)");
    copy(s, prog, block);
  }
}

// A static schedule, loosely synchronously: in phase order, each block once
// its peer has published.
Task<void> CopyEngine::copy_phases(CopyExchangeState& s, Process& p, std::uint32_t core, std::uint64_t run) {
  const CopyCoreProgram& prog = s.program(core);
  for (const CopyBlock& block : prog.blocks) {
    if (block.peer_core != core) {
      co_await WatchAwaiter(p, s.progress(block.peer_core).published, run,
                            "another core's buffers (compiled exchange)");
    }
    copy(s, prog, block);
  }
}

// The papers' synchronous model: phase k + 1 starts on no core before every
// core with participants has copied its phase k.
Task<void> CopyEngine::copy_strict(CopyExchangeState& s, Process& p, std::uint32_t core, std::uint64_t run) {
  const CopyCoreProgram& prog = s.program(core);
  const std::uint64_t phases = s.options().phases;
  std::size_t b = 0;
  for (std::uint64_t k = 0; k < phases; ++k) {
    for (; b < prog.blocks.size() && prog.blocks[b].phase == k; ++b) {
      const CopyBlock& block = prog.blocks[b];
      if (block.peer_core != core) {
        co_await WatchAwaiter(p, s.progress(block.peer_core).published, run,
                              "another core's buffers (compiled exchange)");
      }
      copy(s, prog, block);
    }
    const std::uint64_t passed = (run - 1) * phases + k + 1;
    s.progress(core).phases_done.store(passed, std::memory_order_release);  // pairs with the acquires below
    ring(p, prog.others);
    for (std::uint32_t c : prog.others) {
      co_await WatchAwaiter(p, s.progress(c).phases_done, passed, "the other cores' phase (strict compiled exchange)");
    }
  }
}

// DRS_N pushed by the senders' core: each sender's messages in an order
// shuffled per run, each copied only while its receiver's busy lock is held.
Task<void> CopyEngine::copy_with_busy_locks(CopyExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                            std::uint64_t run) {
  CopyCoreProgram& prog = s.program(core);
  const CopyExchangeOptions& o = s.options();
  std::size_t left = 0;
  for (CopyCoreProgram::Sender& sender : prog.senders) {
    const std::size_t n = sender.end - sender.begin;
    std::uint32_t* pending = prog.pending.data() + sender.begin;
    for (std::size_t k = 0; k < n; ++k) pending[k] = static_cast<std::uint32_t>(sender.begin + k);
    SplitMix64 rng(splitmix64(o.seed ^ splitmix64(run)) ^ (std::uint64_t{sender.rank} * 0xd1b54a32d192ed03ull));
    for (std::size_t k = n; k > 1; --k) std::swap(pending[k - 1], pending[rng() % k]);
    sender.left = n;
    left += n;
  }
  const std::uint32_t yields = std::max<std::uint32_t>(o.retry_yields, 1);
  while (left > 0) {
    std::uint32_t unpublished = kNoCore;
    std::size_t copied = 0;
    for (CopyCoreProgram::Sender& sender : prog.senders) copied += busy_lock_pass(s, g, sender, prog, run, unpublished);
    left -= copied;
    if (copied > 0 || left == 0) continue;
    if (unpublished != kNoCore) {
      co_await WatchAwaiter(p, s.progress(unpublished).published, run, "a receiver's buffers (compiled DRS_N)");
    } else {
      for (std::uint32_t y = 0; y < yields; ++y) co_await p.yield();
    }
  }
}

// One pass over a sender's pending messages; returns how many it copied. A
// message whose receiver's core has not published is passed over without an
// inquiry, and its core noted in `unpublished`.
std::size_t CopyEngine::busy_lock_pass(CopyExchangeState& s, const Group& g, CopyCoreProgram::Sender& sender,
                                CopyCoreProgram& prog, std::uint64_t run, std::uint32_t& unpublished) {
  std::uint32_t* pending = prog.pending.data() + sender.begin;
  CopyMemberSlot& from = s.slot(sender.rank);
  BusyLockObserver* observer = s.options().observer;
  std::size_t copied = 0;
  for (std::size_t k = 0; k < sender.left;) {
    const std::uint32_t i = pending[k];
    const CopyStep& st = prog.steps[i];
    const std::uint32_t dst_core = prog.step_core[i];
    if (s.progress(dst_core).published.load(std::memory_order_acquire) < run) {
      unpublished = dst_core;
      ++k;
      continue;
    }
    ++from.inquiries;
    BusyLock& lock = g.busy_lock(st.dst);
    if (!lock.try_acquire()) {
      ++k;
      continue;
    }
    if (observer) observer->enter(st.dst);
    copy_step(s, st);
    if (observer) observer->leave(st.dst);
    lock.release();
    std::copy(pending + k + 1, pending + sender.left, pending + k);  // the rest keep their order
    --sender.left;
    ++copied;
  }
  return copied;
}

}  // namespace switchyard::detail

namespace switchyard {

Task<CopyRunStats> run_copy_exchange(const Communicator& comm, std::uint64_t key, Rank participants,
                                     const CopyMember& mine, CopyRegions regions, CopyExchangeOptions options) {
  return detail::CopyEngine::run(comm, key, participants, &mine, regions, options);
}

}  // namespace switchyard
