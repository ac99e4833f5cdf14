#include "switchyard/compiled_exchange.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiled_exchange_state.hpp"
#include "group.hpp"
#include "job.hpp"
#include "switchyard/assert.hpp"
#include "switchyard/errors.hpp"
#include "worker.hpp"

namespace switchyard::detail {

namespace {

constexpr std::uint32_t kNoCore = ~std::uint32_t{0};
constexpr std::size_t kMaxExchangesPerCommunicator = 4096;
constexpr std::uint64_t kPageBytes = 4096;  // writes_pages: a receiver's share worth writing in order
constexpr std::uint64_t kRoundBytes = 32 * 1024, kLeastPiecesPerRound = 16;  // lay_out_rounds
constexpr std::uint64_t kSmallProgramBytes = 64 * 1024;  // is_small: copy_small_bytes

void add_unique(LineVector<std::uint32_t>& cores, std::uint32_t core) {
  if (std::find(cores.begin(), cores.end(), core) == cores.end()) cores.push_back(core);
}

}  // namespace

void CompiledEngine::refuse(Rank me, const std::string& why) {
  throw InvalidArgument("switchyard: compiled exchange on rank " + std::to_string(me) + ": " + why);
}

CompiledExchangeState& CompiledEngine::state_of(Process& p, const Group& g, std::uint64_t key, Rank participants,
                                                const CompiledExchangeOptions& options) {
  Job& job = p.job_;
  GroupAttachment& a = g.attachment(key, [&](std::size_t exchanges) {
    if (exchanges > kMaxExchangesPerCommunicator) {
      refuse(g.members().to_comm(p.rank()),
             "more than " + std::to_string(kMaxExchangesPerCommunicator) +
                 " compiled exchanges on one communicator in one job (each keeps its programs until the job "
                 "ends): make a plan once and run it many times, run the plans in jobs of their own, or run them "
                 "on messages (ExchangeExecution::messages)");
    }
    const Membership& members = g.members();
    auto s = std::make_unique<CompiledExchangeState>(g, participants, job.worker_count(), options);
    for (std::uint32_t w = 0; w < job.worker_count(); ++w) {
      const std::uint32_t global = job.routes().global_core(Route{job.node(), w, 0});
      CompiledCoreProgram& prog = s->program(w);
      for (Process* q : members.local[global]) {
        if (members.to_comm(q->rank()) < participants) prog.members.push_back(q);
      }
      prog.participants = static_cast<std::uint32_t>(prog.members.size());
      prog.arrivals.resize(prog.members.size());
    }
    if (members.nodes_spanned > 1) {
      s->spans_nodes = true;
      for (Rank r = 0; r < participants; ++r) {
        if (job.routes()[members.to_job(r)].node == job.node()) {
          s->leader = r;
          s->leader_core = job.routes()[members.to_job(r)].core;
          break;
        }
      }
    }
    return s;
  });
  auto& s = static_cast<CompiledExchangeState&>(a);
  const CompiledExchangeOptions& first = s.options();
  if (s.participants() != participants || first.side != options.side || first.order != options.order ||
      first.phases != options.phases || first.step_order != options.step_order) {
    refuse(g.members().to_comm(p.rank()),
           "exchange " + std::to_string(key) + " was first run with other options or participants");
  }
  return s;
}

// The worker of participant r, or kNoCore for a member of another node
// (whose pieces travel through the node's staging instead).
std::uint32_t CompiledEngine::core_of(const Group& g, const Job& job, Rank r) {
  const Route& route = job.routes()[g.members().to_job(r)];
  return route.node == job.node() ? route.core : kNoCore;
}

// The core's program, once all its participants have published their steps
// (its first run in the job): the one its first participant's cache kept
// from an earlier job, if compiled for the same participants on this core
// and every participant on the same core, or else compiled now. Either way
// its addresses are looked up again in this job's first run.
void CompiledEngine::compile(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core) {
  CompiledCoreProgram& prog = s.program(core);
  const Membership& members = g.members();
  CompiledProgramCache* cache = s.member_run(members.to_comm(prog.members.front()->rank())).cache;
  if (cache) {
    prog.home = cache->shared_from_this();
    const bool traced = p.trace_ != nullptr;
    if (cache->take(core, prog, [&](const CompiledCoreProgram& kept) {
          return kept.traced == traced && compiled_for(kept, s, g, p.job_, prog);
        })) {
      prog.seen_published.assign(s.cores(), 0);  // run numbers start again with the job
      prog.published_run = 0;  // and so do the progress words
      prog.regions_moves = 0;
      prog.resolved_with.assign(s.cores(), ~std::uint64_t{0});  // nothing resolved yet
      prog.deferred.clear();
      prog.staged_with = ~std::uint64_t{0};
      restage_for_job(prog);
      return;
    }
  }
  compile_anew(s, g, p, core);
  // Relaxed: a tally, read after the job's workers have joined.
  p.job_.copy_programs_compiled.fetch_add(1, std::memory_order_relaxed);
}

// Whether `kept` was compiled for this job's core `prog`: the same number of
// participants and cores, every participant on the same core, and the same
// parts for the core's members, in order (the parts never change while their
// exchange lives).
bool CompiledEngine::compiled_for(const CompiledCoreProgram& kept, CompiledExchangeState& s, const Group& g,
                                  const Job& job, const CompiledCoreProgram& prog) {
  if (kept.layout.size() != s.participants() || kept.seen_published.size() != s.cores() ||
      kept.parts.size() != prog.members.size()) {
    return false;
  }
  for (Rank r = 0; r < s.participants(); ++r) {
    if (kept.layout[r] != core_of(g, job, r)) return false;
  }
  for (std::size_t m = 0; m < prog.members.size(); ++m) {
    if (kept.parts[m] != s.slot(g.members().to_comm(prog.members[m]->rank())).part) return false;
  }
  return true;
}

void CompiledEngine::compile_anew(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core) {
  CompiledCoreProgram& prog = s.program(core);
  stage_pairs(s, g, p, core);
  std::vector<std::uint32_t> ordinal = collect_steps(s, g, p, core);
  order_steps(s, prog, core, ordinal);
  const CopyOrder o = s.options().order;
  for (std::size_t i = 0; i < prog.steps.size(); ++i) {
    if (o == CopyOrder::strict_phases && prog.steps[i].phase >= s.options().phases) {
      refuse(prog.steps[i].dst, "a step of phase " + std::to_string(prog.steps[i].phase) + " in an exchange of " +
                                    std::to_string(s.options().phases) + " phases");
    }
    const bool by_phase = o == CopyOrder::phases || o == CopyOrder::strict_phases;
    if (prog.blocks.empty() || prog.blocks.back().peer_core != prog.step_core[i] ||
        (by_phase && prog.blocks.back().phase != prog.steps[i].phase)) {
      prog.blocks.push_back(CopyBlock{prog.step_core[i], prog.steps[i].phase, i, i});
    }
    prog.blocks.back().end = i + 1;
  }
  if (s.options().side == CopySide::receiver && o == CopyOrder::phases) lay_out_rounds(prog);
  prog.small = is_small(prog);
  prog.small_step_bytes = prog.small ? one_piece_size(prog.steps) : 0;
  prog.deferred.reserve(prog.blocks.size());
  prog.seen_published.assign(s.cores(), 0);
  prog.resolved.resize(prog.steps.size());
  prog.resolved_with.assign(s.cores(), ~std::uint64_t{0});  // nothing resolved yet
  for (std::uint32_t w = 0; w < s.cores(); ++w) {
    if (w != core && s.program(w).participants > 0) prog.others.push_back(w);
  }
  if (o == CopyOrder::receiver_locks) compile_senders(prog);
  prog.compiled = true;
}

// The core's steps, in its members' order, each merged into the one before
// where it continues it as a strided step (extend_strided: a
// redistribution's runs of two doubles become one step per message row);
// the cores at their other ends; what the program is compiled for (`layout`,
// `parts`). Returns per step its member's place on the core.
std::vector<std::uint32_t> CompiledEngine::collect_steps(CompiledExchangeState& s, const Group& g, Process& p,
                                                         std::uint32_t core) {
  CompiledCoreProgram& prog = s.program(core);
  const Job& job = p.job_;
  const Membership& members = g.members();
  const bool pull = s.options().side == CopySide::receiver;
  auto core_of = [&](Rank r, Rank me) {
    if (r >= s.participants()) refuse(me, "a step names rank " + std::to_string(r) + ", not a participant");
    return CompiledEngine::core_of(g, job, r);
  };
  prog.layout.resize(s.participants());
  for (Rank r = 0; r < s.participants(); ++r) prog.layout[r] = CompiledEngine::core_of(g, job, r);
  prog.parts.clear();
  std::vector<std::uint32_t> ordinal;
  for (std::uint32_t m = 0; m < prog.members.size(); ++m) {
    const Rank me = members.to_comm(prog.members[m]->rank());
    const CompiledMember& part = *s.slot(me).part;
    prog.parts.push_back(&part);
    for (const CopyStep& st : pull ? part.incoming : part.outgoing) {
      if ((pull ? st.dst : st.src) != me) refuse(me, "a step of another member in its own list");
      const std::uint32_t other = core_of(pull ? st.src : st.dst, me);
      if (st.bytes == 0 || other == kNoCore) continue;  // nothing to copy here; its hooks still run
      if (other != core && staged_with(prog.staged_in, other)) continue;  // unpacked from the sender's area
      if (!prog.steps.empty() && ordinal.back() == m && extend_strided(prog.steps.back(), st)) continue;
      prog.steps.push_back(st);
      prog.step_core.push_back(other);
      ordinal.push_back(m);
      if (other != core) add_unique(prog.sources, other);
    }
    for (const CopyStep& st : pull ? part.outgoing : part.incoming) {
      const std::uint32_t other = core_of(pull ? st.dst : st.src, me);
      if (st.bytes != 0 && other != core && other != kNoCore && !staged_with(prog.staged_out, other)) {
        add_unique(prog.readers, other);
      }
    }
  }
  return ordinal;
}

// The order of the options (CopyOrder), the steps of each key in the order
// they came: a permutation applied to both arrays where they are not in it
// already. Merging before ordering merges what merging after would: a
// message's pieces are consecutive in its member's list and share a key.
void CompiledEngine::order_steps(CompiledExchangeState& s, CompiledCoreProgram& prog, std::uint32_t core,
                                 const std::vector<std::uint32_t>& ordinal) {
  const CopyOrder o = s.options().order;
  const bool by_receiver = s.options().side == CopySide::receiver && writes_pages(prog);
  auto key = [&](std::size_t i) {
    const std::uint64_t peer = prog.step_core[i] == core ? 0 : prog.step_core[i] + 1;  // own core's first
    if (o == CopyOrder::any) return by_receiver ? (std::uint64_t{ordinal[i]} << 32) | peer : peer;
    if (o == CopyOrder::receiver_locks) return std::uint64_t{0};  // per sender, in the members' order
    return (std::uint64_t{prog.steps[i].phase} << 32) | peer;
  };
  std::vector<std::size_t> order(prog.steps.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto by_key = [&](std::size_t a, std::size_t b) { return key(a) < key(b); };
  if (std::is_sorted(order.begin(), order.end(), by_key)) return;
  std::stable_sort(order.begin(), order.end(), by_key);
  std::vector<CopyStep> steps(order.size());
  std::vector<std::uint32_t> cores(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    steps[i] = prog.steps[order[i]];
    cores[i] = prog.step_core[order[i]];
  }
  prog.steps = std::move(steps);
  prog.step_core = std::move(cores);
}

// AC's order, pulling: whether each receiver's messages go together (its own
// core's senders first), rather than every receiver's own-core messages
// before any from other cores. Together, a receiver's buffers are written one
// after the other, as the floor writes them: faster where each receiver takes
// pages (n=512 at 1 KiB: 16 KiB each; the floor's own two threads are slower
// in the other order too). Where a receiver takes less than a page, there is
// no stream of writes to keep, and the copies of each core's blocks cost more
// than they save (docs/benchmarks.md, "Figures behind the runtime's
// comments"). Pushing,
// the writes scatter either way, and grouped by the receivers' cores they are
// faster.
bool CompiledEngine::writes_pages(const CompiledCoreProgram& prog) {
  std::uint64_t bytes = 0;
  for (const CopyStep& st : prog.steps) bytes += st.count * st.bytes;
  return bytes >= kPageBytes * prog.participants;
}

// Whether every step is one piece of at most kSmallStepBytes and all of them
// together at most kSmallProgramBytes (CompiledCoreProgram::small).
bool CompiledEngine::is_small(const CompiledCoreProgram& prog) {
  std::uint64_t bytes = 0;
  for (const CopyStep& st : prog.steps) {
    if (st.count != 1 || st.bytes > kSmallStepBytes) return false;
    bytes += st.bytes;
  }
  return bytes <= kSmallProgramBytes;
}

// Rounds of about kRoundBytes of the strided steps' spans each (the bytes
// from a step's first piece to its last, both sides), which a core's L1
// holds across a round: the lines of a receiver that one message's pieces
// leave partly written are still there when the next message's pieces fill
// them. At least kLeastPiecesPerRound pieces of each strided step per round;
// one round where no member takes two strided steps. At fig9's P=4 and 8
// (three 2-double pieces to a receiver's 6-double period), 6-10 % and 10-25 %
// less time than a pass per message; rounds of 128 KiB gain nothing.
void CompiledEngine::lay_out_rounds(CompiledCoreProgram& prog) {
  std::uint64_t span = 0, fewest = ~std::uint64_t{0};
  std::vector<Rank> receivers;  // of the strided steps
  for (const CopyStep& st : prog.steps) {
    if (st.count < 2) continue;
    span += st.count * (st.src_stride + st.dst_stride);
    fewest = std::min<std::uint64_t>(fewest, st.count);
    receivers.push_back(st.dst);
  }
  std::sort(receivers.begin(), receivers.end());
  const std::uint64_t rounds = std::min(span / kRoundBytes, fewest / kLeastPiecesPerRound);
  if (rounds < 2 || std::adjacent_find(receivers.begin(), receivers.end()) == receivers.end()) return;
  prog.rounds = static_cast<std::uint32_t>(rounds);
  prog.round_share.resize(prog.steps.size());
  for (std::size_t i = 0; i < prog.steps.size(); ++i) {
    prog.round_share[i] = (prog.steps[i].count + prog.rounds - 1) / prog.rounds;
  }
}

void CompiledEngine::compile_senders(CompiledCoreProgram& prog) {
  for (std::size_t i = 0; i < prog.steps.size(); ++i) {
    if (prog.senders.empty() || prog.senders.back().rank != prog.steps[i].src) {
      prog.senders.push_back(CompiledCoreProgram::Sender{prog.steps[i].src, i, i, 0});
    }
    prog.senders.back().end = i + 1;
  }
  prog.pending.resize(prog.steps.size());
}

CompiledExchangeState& CompiledEngine::enter(Process& p, const Group& g, Rank me, std::uint64_t key, Rank participants,
                                             const CompiledExchangeOptions& options) {
  p.check_cancelled();
  if (me >= participants) refuse(me, "not one of the exchange's " + std::to_string(participants) + " participants");
  if (options.order == CopyOrder::receiver_locks && options.side != CopySide::sender) {
    refuse(me, "busy locks are held by senders: receiver_locks needs CopySide::sender");
  }
  return state_of(p, g, key, participants, options);
}

Task<void> CompiledEngine::prepare(Communicator comm, std::uint64_t key, Rank participants, const CompiledMember* mine,
                                   CompiledExchangeOptions options) {
  Process& p = comm.process();
  const Group& g = comm.group();
  CompiledExchangeState& s = enter(p, g, comm.rank(), key, participants, options);
  s.slot(comm.rank()).part = mine;
  s.member_run(comm.rank()).cache = options.programs;
  CompiledCoreProgram& prog = s.program(p.worker_.index());
  if (prog.compiled) co_return;  // prepared already (a plan prepared twice on one communicator)
  if (++prog.arrived < prog.participants) {
    while (!prog.compiled) co_await p.park("its core's compiling of a compiled exchange");
    co_return;
  }
  prog.arrived = 0;
  compile(s, g, p, p.worker_.index());
  for (Process* q : prog.members) q->notify();
}

// A bound run's state: looked up in the binding's first run (which checks its
// arguments as every unbound run does), kept in the binding after.
CompiledExchangeState& CompiledEngine::bound_state(CompiledBinding& b, Process& p, const Group& g, Rank me) {
  if (b.state_) [[likely]] {
    p.check_cancelled();
    return *b.state_;
  }
  b.state_ = &enter(p, g, me, b.key_, b.participants_, b.options_);
  return *b.state_;
}

// Step 1 of a run, in the awaiting process: its checks, its publication and
// its arrival at its core. Never complete here: a participant that is not the
// last of its core waits for the copier, and the last one copies. Whether
// this one is its core's copier.
bool CompiledEngine::arrive(CompiledRun& r) {
  CompiledBinding* const b = r.binding_;
  // A binding run again right after its own last run (a plan run again and
  // again on one binding) was looked up, checked and published then. Every
  // run but the first takes this path, which makes no call that returns
  // (saves no registers); the others go out of line.
  if (b && b->state_) [[likely]] {
    r.comm_.group();  // checks that the communicator is of the running job
    r.comm_.process_->check_cancelled();
    CompiledMemberRun& counts = b->state_->member_run(r.comm_.rank());
    if (counts.binding == b->id_) [[likely]]
      return arrive_at_core(r, *b->state_, counts);
  }
  return arrive_publishing(r);
}

bool CompiledEngine::arrive_publishing(CompiledRun& r) {
  const Group& g = r.comm_.group();  // checks that the communicator is of the running job
  Process& p = *r.comm_.process_;
  const Rank me = r.comm_.rank();
  CompiledBinding* const b = r.binding_;
  CompiledExchangeState& s =
      b ? bound_state(*b, p, g, me) : enter(p, g, me, r.unbound_->key, r.unbound_->participants, r.unbound_->options);
  CompiledMemberRun& counts = s.member_run(me);
  if (!b || counts.binding != b->id_) publish_member(r, s, counts, s.program(p.worker_.index()), me);
  return arrive_at_core(r, s, counts);
}

inline bool CompiledEngine::arrive_at_core(CompiledRun& r, CompiledExchangeState& s, CompiledMemberRun& counts) {
  Process& p = *r.comm_.process_;
  CompiledCoreProgram& prog = s.program(p.worker_.index());
  counts.inquiries = 0;
  r.run_ = ++counts.runs;
  r.state_ = &s;
  // Each participant of the core arrives once a run: the last one copies and
  // starts the count again before any of them can arrive at the next run.
  SWITCHYARD_ASSERT(prog.arrived < prog.participants);
  prog.arrivals[prog.arrived] = &p;
  if (++prog.arrived < prog.participants) {
    if (prog.arrived == 1) prog.finished[r.run_ % 2] = false;
    r.step_ = s.spans_nodes && r.comm_.rank() == s.leader ? CompiledRun::Step::leader : CompiledRun::Step::parked;
    return false;
  }
  prog.arrived = 0;  // nobody here arrives again before `finished` says this run is over
  r.step_ = CompiledRun::Step::copier;
  return true;
}

// The member's regions for this run: the same as its last run's (the same
// span lists, or the same binding) were checked then, and the core's resolved
// copies are still good; others are checked here, before anything is
// published, and kept. Then its slot says where they are.
void CompiledEngine::publish_member(CompiledRun& r, CompiledExchangeState& s, CompiledMemberRun& counts,
                                    CompiledCoreProgram& prog, Rank me) {
  CompiledBinding* const b = r.binding_;
  const CompiledRegions regions = b ? CompiledRegions{b->send_, b->recv_} : r.unbound_->regions;
  const std::uint64_t bound = b ? b->id_ : 0;
  const bool moved = counts.regions_differ(regions, bound);
  if (moved && !b && r.unbound_->check.check) r.unbound_->check.check(r.unbound_->check.context, regions);
  s.slot(me).publish(regions.send.data(), regions.recv.data(), b ? b->mine_ : r.unbound_->mine);
  counts.cache = b ? b->options_.programs : r.unbound_->options.programs;
  if (moved) {
    counts.keep_regions(regions, bound);
    prog.regions_moved = true;
  }
}

// A waiting participant parks on its core's `finished`, in the awaiting
// coroutine itself; the copier and a leader go on in a task of their own.
std::coroutine_handle<> CompiledEngine::suspend(CompiledRun& r, std::coroutine_handle<> awaiter) {
  if (r.step_ == CompiledRun::Step::parked) {
    Process& p = *r.comm_.process_;
    p.suspend_in(awaiter, &r.state_->program(p.worker_.index()).finished[r.run_ % 2],
                 "the copies of its compiled exchange",
                 Process::Activity{"a compiled exchange run", r.comm_.group_->context()});
    return std::noop_coroutine();
  }
  return suspend_in_task(r, awaiter);
}

std::coroutine_handle<> CompiledEngine::suspend_in_task(CompiledRun& r, std::coroutine_handle<> awaiter) {
  if (r.step_ == CompiledRun::Step::copier) {
    r.task_ = copy_as_copier(r.comm_, *r.state_, r.run_);
  } else if (r.step_ == CompiledRun::Step::leader) {
    r.task_ = wait_as_leader(r.comm_, *r.state_, r.run_);
  }
  return r.task_.await_suspend(awaiter);
}

CompiledRunStats CompiledEngine::resume(CompiledRun& r) {
  if (r.step_ == CompiledRun::Step::parked) [[likely]] {
    Process& p = *r.comm_.process_;
    p.left_call();
    p.resumed();  // throws if the job was cancelled meanwhile
    return stats_of(*r.state_, r.comm_.rank());
  }
  if (r.step_ == CompiledRun::Step::complete) return stats_of(*r.state_, r.comm_.rank());
  return resume_from_task(r);
}

CompiledRunStats CompiledEngine::resume_from_task(CompiledRun& r) { return r.task_.await_resume(); }

// Only receiver_locks counts inquiries: other orders leave the member's line,
// which hundreds of processes' runs on a core have evicted by now, unread.
CompiledRunStats CompiledEngine::stats_of(CompiledExchangeState& s, Rank me) {
  if (s.options().order != CopyOrder::receiver_locks) return CompiledRunStats{};
  return CompiledRunStats{s.member_run(me).inquiries};
}

Task<CompiledRunStats> CompiledEngine::wait_as_leader(Communicator comm, CompiledExchangeState& s, std::uint64_t run) {
  Process& p = comm.process();
  const Process::ActivityScope activity(p, "a compiled exchange run", comm.group().context());
  co_await lead(s, comm, run);
  const CompiledCoreProgram& prog = s.program(p.worker_.index());
  while (prog.done < run) co_await p.park("the copies of its compiled exchange");
  co_return stats_of(s, comm.rank());
}

Task<CompiledRunStats> CompiledEngine::copy_as_copier(Communicator comm, CompiledExchangeState& s, std::uint64_t run) {
  Process& p = comm.process();
  const Group& g = comm.group();
  const Process::ActivityScope activity(p, "a compiled exchange run", g.context());
  const Rank me = comm.rank();
  const std::uint32_t core = p.worker_.index();
  const bool leads = s.spans_nodes && me == s.leader;
  CompiledCoreProgram& prog = s.program(core);
  CompiledCoreProgress& mine_done = s.progress(core);
  if (prog.published_run < run) {
    if (staging_busy(s, prog, run)) co_await wait_staging_free(p, s, prog, run);
    publish_core(s, g, p, core, run);
  }
  if (s.spans_nodes) {
    if (!prog.staging) co_await lay_out_staging(s, g, p, core, run);
    resolve_staged(s, prog, core);
    pack(prog, core);
    // Runs follow each other: each word counts them one by one (relaxed: this core's own word).
    SWITCHYARD_ASSERT(mine_done.packed.load(std::memory_order_relaxed) + 1 == run);
    mine_done.packed.store(run, std::memory_order_release);  // pairs with the leader's acquire
    ring(p, std::span(&s.leader_core, 1));
    // The leader's sends leave before this core copies within the node: the
    // other nodes then pull this node's pieces while they copy, rather than
    // after, and none waits on this core (a fifth of a run at n=512 and 1 KiB
    // across 2 nodes).
    if (core == s.leader_core && !leads) {
      p.worker_.end_watches_now();
      co_await p.yield();
    }
  }
  if (!copy_without_waiting(s, g, p, core, run)) co_await copy_program(s, g, p, core, run);
  for (StagedPair& pair : prog.staged_in) {
    if (!published(s, prog, core, pair.core, run)) {
      co_await peer_published(p, s, pair.core, run);
      prog.seen_published[pair.core] = run;
    }
    unpack_staged(s, pair, core, run);
  }
  if (s.options().order != CopyOrder::receiver_locks && !p.trace_) keep_resolved(s, prog, core);
  if (s.spans_nodes) {
    if (leads) co_await lead(s, comm, run);
    co_await WatchAwaiter(p, s.exchanged, run, "the messages between nodes of its compiled exchange");
    unpack(prog, core);
  }
  say_copied(s, p, prog, core, run);
  if (s.spans_nodes) ring(p, std::span(&s.leader_core, 1));
  for (std::uint32_t c : prog.readers) {
    co_await WatchAwaiter(p, s.progress(c).copied, run, "the copies of another core in its compiled exchange");
  }
  end_core_run(p, prog, run);
  co_return stats_of(s, me);
}

// The copier's core has copied run `run`: its word for the cores it copied
// out of or into, and for the senders of its staged pairs.
void CompiledEngine::say_copied(CompiledExchangeState& s, Process& p, CompiledCoreProgram& prog, std::uint32_t core,
                                std::uint64_t run) {
  CompiledCoreProgress& mine_done = s.progress(core);
  SWITCHYARD_ASSERT(mine_done.copied.load(std::memory_order_relaxed) + 1 == run);  // this core's own word
  SWITCHYARD_ASSERT(mine_done.published.load(std::memory_order_relaxed) == run);  // published before copied
  // Release: pairs with the acquires of the cores in `sources` and of the
  // senders of `staged_in` (staging_busy), which may then pack again.
  mine_done.copied.store(run, std::memory_order_release);
  ring(p, prog.sources);
  ring_staged(p, prog.staged_in);
  claim_next_halves(prog, run);
}

// Whether every core that copies out of or into this core's members has
// copied run `run` (acquire: pairs with their say_copied's release; their
// copies are over, the members' runs may end).
bool CompiledEngine::readers_copied(CompiledExchangeState& s, const CompiledCoreProgram& prog, std::uint64_t run) {
  return std::all_of(prog.readers.begin(), prog.readers.end(),
                     [&](std::uint32_t c) { return s.progress(c).copied.load(std::memory_order_acquire) >= run; });
}

// The run is over on this core: its participants may return, last-come
// first (see `arrivals`); the copier itself is running: notify_each passes it by.
void CompiledEngine::end_core_run(Process& p, CompiledCoreProgram& prog, std::uint64_t run) {
  prog.done = run;
  prog.finished[run % 2] = true;
  p.worker_.notify_each(prog.arrivals.rbegin(), prog.arrivals.rend(), p);
}

// The copier's last step where copy_at_once did the others: it waits until
// the cores that copy out of or into its members have copied, then ends its
// core's run (as copy_as_copier ends).
Task<CompiledRunStats> CompiledEngine::wait_for_readers(Communicator comm, CompiledExchangeState& s,
                                                        std::uint64_t run) {
  Process& p = comm.process();
  const Process::ActivityScope activity(p, "a compiled exchange run", comm.group().context());
  CompiledCoreProgram& prog = s.program(p.worker_.index());
  for (std::uint32_t c : prog.readers) {
    co_await WatchAwaiter(p, s.progress(c).copied, run, "the copies of another core in its compiled exchange");
  }
  end_core_run(p, prog, run);
  co_return stats_of(s, comm.rank());
}

// The copier's part where nothing of it has to wait: on one node, untraced,
// in the orders any and phases, its core's staging area free, and every core
// it copies from published. It copies then in the awaiting process itself,
// with no task and no suspension (a task costs a small run more than its
// copies), and the run is complete at once unless a core that copies out of
// its members is not done: then the copier waits for it in a task (`task_`,
// Step::readers). False, with nothing copied (its core may have published),
// where something would wait: copy_as_copier does it all then.
bool CompiledEngine::copy_at_once(CompiledRun& r) {
  CompiledExchangeState& s = *r.state_;
  Process& p = *r.comm_.process_;
  if (s.spans_nodes || p.trace_) return false;
  const Group& g = r.comm_.group();
  const std::uint32_t core = p.worker_.index();
  const std::uint64_t run = r.run_;
  CompiledCoreProgram& prog = s.program(core);
  if (prog.published_run < run) {
    if (staging_busy(s, prog, run)) return false;
    publish_core(s, g, p, core, run);
  }
  for (const StagedPair& pair : prog.staged_in) {
    if (!published(s, prog, core, pair.core, run)) return false;
  }
  if (!copy_without_waiting(s, g, p, core, run)) return false;
  for (StagedPair& pair : prog.staged_in) unpack_staged(s, pair, core, run);
  keep_resolved(s, prog, core);  // any or phases, untraced: every step went through copy()
  say_copied(s, p, prog, core, run);
  if (!readers_copied(s, prog, run) && !p.worker_.wait_alone([&] { return readers_copied(s, prog, run); })) {
    r.task_ = wait_for_readers(r.comm_, s, run);
    r.step_ = CompiledRun::Step::readers;
    return false;
  }
  end_core_run(p, prog, run);
  r.step_ = CompiledRun::Step::complete;
  return true;
}

void CompiledEngine::publish_core(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                  std::uint64_t run) {
  CompiledCoreProgram& prog = s.program(core);
  if (!prog.compiled) compile(s, g, p, core);
  CompiledCoreProgress& mine_done = s.progress(core);
  if (prog.regions_moved) {
    prog.regions_moved = false;
    // Single writer; ordered for the readers by the release just below.
    mine_done.regions_moved.store(++prog.regions_moves, std::memory_order_relaxed);
  }
  pack_staged(s, prog, core, run);
  // This core's own words: runs follow each other, and a run is published
  // only once the one before is copied (staging_busy counts on it).
  SWITCHYARD_ASSERT(mine_done.published.load(std::memory_order_relaxed) + 1 == run);
  SWITCHYARD_ASSERT(mine_done.copied.load(std::memory_order_relaxed) + 1 == run);
  prog.published_run = run;
  // Release: pairs with the acquires of the cores in `readers` and of the
  // receivers of `staged_out`: the members' regions, and the pieces just packed.
  mine_done.published.store(run, std::memory_order_release);
  ring(p, prog.readers);
  ring_staged(p, prog.staged_out);
}

// Orders any and phases copy the same blocks in the same order where no
// block has to wait for its peer: then at once, without the tasks that would
// wait (their frames cost a run of small messages more than its copies; a
// traced run keeps them, for its phase spans). False, with nothing copied,
// where some block's peer has not published yet.
bool CompiledEngine::copy_without_waiting(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                          std::uint64_t run) {
  const CopyOrder order = s.options().order;
  if ((order != CopyOrder::any && order != CopyOrder::phases) || p.trace_) return false;
  CompiledCoreProgram& prog = s.program(core);
  for (const CopyBlock& block : prog.blocks) {
    if (!published(s, prog, core, block.peer_core, run)) return false;
  }
  if (order == CopyOrder::phases && prog.rounds > 1) {
    for (std::uint32_t round = 0; round < prog.rounds; ++round) {
      for (const CopyBlock& block : prog.blocks) copy_round(s, prog, block, core, round);
    }
    return true;
  }
  for (const CopyBlock& block : prog.blocks) copy(s, g, p, prog, block, core, run);
  return true;
}

Task<void> CompiledEngine::copy_program(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                        std::uint64_t run) {
  switch (s.options().order) {
    case CopyOrder::any:
      co_await copy_any(s, g, p, core, run);
      break;
    case CopyOrder::phases:
      co_await copy_phases(s, g, p, core, run);
      break;
    case CopyOrder::strict_phases:
      co_await copy_strict(s, g, p, core, run);
      break;
    case CopyOrder::receiver_locks:
      co_await copy_under_receiver_locks(s, g, p, core, run);
      break;
  }
}

void CompiledEngine::copy_traced(CompiledExchangeState& s, const Group& g, Process& p, const CopyStep& st,
                                 const char* name) {
  const Membership& members = g.members();
  const TraceSpan span(p, TraceCategory::message, name,
                       TraceArgs{.src = members.to_job(st.src),
                                 .dst = members.to_job(st.dst),
                                 .has_bytes = true,
                                 .bytes = st.count * st.bytes});
  copy_step(s, st);
}

// AC: the blocks whose peer has published first, then the others as their
// peers publish.
Task<void> CompiledEngine::copy_any(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                    std::uint64_t run) {
  CompiledCoreProgram& prog = s.program(core);
  prog.deferred.clear();  // capacity kept: no allocation after the first run
  for (std::size_t b = 0; b < prog.blocks.size(); ++b) {
    const CopyBlock& block = prog.blocks[b];
    if (published(s, prog, core, block.peer_core, run)) {
      copy(s, g, p, prog, block, core, run);
    } else {
      prog.deferred.push_back(b);
    }
  }
  for (std::size_t b : prog.deferred) {
    const CopyBlock& block = prog.blocks[b];
    co_await peer_published(p, s, block.peer_core, run);
    copy(s, g, p, prog, block, core, run);
  }
}

// A static schedule, loosely synchronously: in phase order, each block once
// its peer has published.
Task<void> CompiledEngine::copy_phases(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                       std::uint64_t run) {
  CompiledCoreProgram& prog = s.program(core);
  if (prog.rounds > 1 && !p.trace_) {
    for (std::uint32_t round = 0; round < prog.rounds; ++round) {
      for (const CopyBlock& block : prog.blocks) {
        if (round == 0 && block.peer_core != core) {
          co_await peer_published(p, s, block.peer_core, run);
        }
        copy_round(s, prog, block, core, round);
      }
    }
    co_return;
  }
  std::optional<TraceSpan> phase;  // traced: a "phase" span around each phase's blocks
  for (const CopyBlock& block : prog.blocks) {
    if (p.trace_ && (!phase || block.phase != prog.blocks[&block - prog.blocks.data() - 1].phase)) [[unlikely]] {
      phase.reset();
      phase.emplace(p, TraceCategory::phase, "phase", TraceArgs{.label = "phase", .value = block.phase});
    }
    if (block.peer_core != core) {
      co_await peer_published(p, s, block.peer_core, run);
    }
    copy(s, g, p, prog, block, core, run);
  }
}

// The papers' synchronous model: phase k + 1 starts on no core before every
// core with participants has copied its phase k.
Task<void> CompiledEngine::copy_strict(CompiledExchangeState& s, const Group& g, Process& p, std::uint32_t core,
                                       std::uint64_t run) {
  CompiledCoreProgram& prog = s.program(core);
  const std::uint64_t phases = s.options().phases;
  std::size_t b = 0;
  for (std::uint64_t k = 0; k < phases; ++k) {
    const TraceSpan phase(p, TraceCategory::phase, "phase", TraceArgs{.label = "phase", .value = k});
    for (; b < prog.blocks.size() && prog.blocks[b].phase == k; ++b) {
      const CopyBlock& block = prog.blocks[b];
      if (block.peer_core != core) {
        co_await peer_published(p, s, block.peer_core, run);
      }
      copy(s, g, p, prog, block, core, run);
    }
    const std::uint64_t passed = (run - 1) * phases + k + 1;
    s.progress(core).phases_done.store(passed, std::memory_order_release);  // pairs with the acquires below
    ring(p, prog.others);
    for (std::uint32_t c : prog.others) {
      co_await WatchAwaiter(p, s.progress(c).phases_done, passed, "the other cores' phase (strict compiled exchange)");
    }
  }
}

// Pushed by the senders' core: each sender's steps in the order the options'
// step_order gives them this run, each copied only while its receiver's busy
// lock is held (the schedulers' DRS_N).
Task<void> CompiledEngine::copy_under_receiver_locks(CompiledExchangeState& s, const Group& g, Process& p,
                                                     std::uint32_t core, std::uint64_t run) {
  CompiledCoreProgram& prog = s.program(core);
  const CompiledExchangeOptions& o = s.options();
  std::size_t left = 0;
  for (CompiledCoreProgram::Sender& sender : prog.senders) {
    const std::size_t n = sender.end - sender.begin;
    std::uint32_t* pending = prog.pending.data() + sender.begin;
    for (std::size_t k = 0; k < n; ++k) pending[k] = static_cast<std::uint32_t>(sender.begin + k);
    if (o.step_order) o.step_order(o.seed, run, sender.rank, std::span(pending, n));
    sender.left = n;
    left += n;
  }
  const std::uint32_t yields = std::max<std::uint32_t>(o.retry_yields, 1);
  while (left > 0) {
    std::uint32_t unpublished = kNoCore;
    std::size_t copied = 0;
    for (CompiledCoreProgram::Sender& sender : prog.senders)
      copied += busy_lock_pass(s, g, p, sender, prog, run, unpublished);
    left -= copied;
    if (copied > 0 || left == 0) continue;
    if (unpublished != kNoCore) {
      co_await WatchAwaiter(p, s.progress(unpublished).published, run,
                            "a receiver's buffers (compiled, receiver locks)");
    } else {
      for (std::uint32_t y = 0; y < yields; ++y) co_await p.yield();
    }
  }
}

// One pass over a sender's pending messages; returns how many it copied. A
// message whose receiver's core has not published is passed over without an
// inquiry, and its core noted in `unpublished`.
std::size_t CompiledEngine::busy_lock_pass(CompiledExchangeState& s, const Group& g, Process& p,
                                           CompiledCoreProgram::Sender& sender, CompiledCoreProgram& prog,
                                           std::uint64_t run, std::uint32_t& unpublished) {
  std::uint32_t* pending = prog.pending.data() + sender.begin;
  CompiledMemberRun& from = s.member_run(sender.rank);
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
    bool acquired = false;
    {
      TraceSpan attempt(p, TraceCategory::lock, "busy_lock", TraceArgs{.dst = g.members().to_job(st.dst)});
      acquired = lock.try_acquire();
      attempt.set("acquired", acquired);
    }
    if (!acquired) {
      ++k;
      continue;
    }
    if (observer) observer->enter(st.dst);
    if (p.trace_) [[unlikely]] {
      copy_traced(s, g, p, st, "locked copy");
    } else {
      copy_step(s, st);
    }
    if (observer) observer->leave(st.dst);
    lock.release();
    std::copy(pending + k + 1, pending + sender.left, pending + k);  // the rest keep their order
    --sender.left;
    ++copied;
  }
  return copied;
}

// Split phase, step 1 now: the member arrives as an awaited run would; its
// core's copier (the last to arrive) also publishes the core, so that the
// cores pulling from its members copy while it computes. Across nodes the
// core publishes when its copier awaits (its staging may need laying out).
void CompiledEngine::start(CompiledRun& r) {
  if (r.started_) {
    stop_readers_of(r);
    refuse(r.comm_.rank(), "start of a run started already (a second start before its wait)");
  }
  if (r.step_ == CompiledRun::Step::task) {
    r.started_ = true;  // a Task runs when awaited
    return;
  }
  arrive(r);
  r.started_ = true;
  if (r.step_ == CompiledRun::Step::copier && !r.state_->spans_nodes) {
    Process& p = *r.comm_.process_;
    CompiledExchangeState& s = *r.state_;
    // A staging area still being unpacked from: the copier's task publishes once it is free.
    if (!staging_busy(s, s.program(p.worker_.index()), r.run_))
      publish_core(s, r.comm_.group(), p, p.worker_.index(), r.run_);
  }
}

// A started run, awaited: complete at once where its core has copied (a
// parked participant; `done` is its own core's, read on its thread); a run
// that is a Task as the Task. Awaited, a run is not started any more.
bool CompiledEngine::ready_after_start(CompiledRun& r) {
  r.started_ = false;
  if (r.step_ == CompiledRun::Step::task) return r.task_.await_ready();
  if (r.step_ == CompiledRun::Step::copier) return copy_at_once(r);
  if (r.step_ != CompiledRun::Step::parked) return false;
  Process& p = *r.comm_.process_;
  return r.state_->program(p.worker_.index()).done >= r.run_;
}

// A started run's regions may be read by other cores until its wait: before
// a refusal unwinds the caller's buffers, every core stops reading and
// writing the job's regions (the job fails with the error all the same).
void CompiledEngine::stop_readers_of(CompiledRun& r) noexcept {
  if (r.started_ && r.comm_.valid()) r.comm_.process_->worker_.quiesce_before_unwinding();
}

void CompiledEngine::refuse_while_started(CompiledRun& r, const std::string& why) {
  stop_readers_of(r);
  throw InvalidArgument(why);
}

void CompiledEngine::abandon(CompiledRun& r, const Communicator& comm, const std::string& why,
                             std::shared_ptr<const void> keep) noexcept {
  if (!comm.valid()) return;  // not inside its job: over, nothing reads the run's memory any more
  Process& p = *comm.process_;
  try {
    if (r.started_ && r.state_) {
      const std::lock_guard lock(r.state_->abandoned_mutex);
      r.state_->abandoned.push_back(std::move(keep));
    }
    p.job_.fail(std::make_exception_ptr(Error(why)), p.rank());
  } catch (...) {
    p.job_.cancel();  // no memory for the error: the job ends all the same
  }
  r.started_ = false;
}

}  // namespace switchyard::detail

namespace switchyard {

void CompiledRun::start() { detail::CompiledEngine::start(*this); }

void CompiledRun::refuse_while_started(const std::string& why) {
  detail::CompiledEngine::refuse_while_started(*this, why);
}

void CompiledRun::abandon(const Communicator& comm, const std::string& why, std::shared_ptr<const void> keep) noexcept {
  detail::CompiledEngine::abandon(*this, comm, why, std::move(keep));
}

bool CompiledRun::await_ready() {
  if (started_) return detail::CompiledEngine::ready_after_start(*this);
  if (step_ == Step::task) return task_.await_ready();
  return detail::CompiledEngine::arrive(*this) && detail::CompiledEngine::copy_at_once(*this);
}

std::coroutine_handle<> CompiledRun::await_suspend(std::coroutine_handle<> awaiter) {
  return detail::CompiledEngine::suspend(*this, awaiter);
}

CompiledRunStats CompiledRun::await_resume() { return detail::CompiledEngine::resume(*this); }

namespace {
Task<CompiledRunStats> await_in_task(CompiledRun run) { co_return co_await run; }
}  // namespace

CompiledRun::operator Task<CompiledRunStats>() && { return await_in_task(std::move(*this)); }

namespace {
// Relaxed: only distinctness matters, and fetch_add gives every binding its own number.
std::atomic<std::uint64_t> last_binding_id{0};
}  // namespace

CompiledBinding::CompiledBinding(const Communicator& comm, std::uint64_t key, Rank participants,
                                 const CompiledMember& mine, std::vector<std::span<const std::byte>> send,
                                 std::vector<std::span<std::byte>> recv, const CompiledExchangeOptions& options)
    : comm_(comm),
      id_(last_binding_id.fetch_add(1, std::memory_order_relaxed) + 1),
      key_(key),
      participants_(participants),
      mine_(&mine),
      send_(std::move(send)),
      recv_(std::move(recv)),
      options_(options) {}

CompiledBinding::CompiledBinding(CompiledBinding&& other) noexcept { *this = std::move(other); }

CompiledBinding& CompiledBinding::operator=(CompiledBinding&& other) noexcept {
  if (this == &other) return *this;
  comm_ = other.comm_;
  key_ = other.key_;
  participants_ = other.participants_;
  mine_ = other.mine_;
  send_ = std::move(other.send_);
  recv_ = std::move(other.recv_);
  options_ = other.options_;
  id_ = std::exchange(other.id_, 0);
  state_ = std::exchange(other.state_, nullptr);
  return *this;
}

void CompiledBinding::refuse_empty() {
  throw InvalidArgument("switchyard: CompiledBinding::run: the binding is empty (default-made or moved from)");
}

CompiledRun run_compiled_exchange(const Communicator& comm, std::uint64_t key, Rank participants,
                                  const CompiledMember& mine, CompiledRegions regions,
                                  const CompiledExchangeOptions& options, CompiledRegionCheck check) {
  return detail::CompiledEngine::make_run(comm, key, participants, mine, regions, options, check);
}

Task<void> prepare_compiled_exchange(const Communicator& comm, std::uint64_t key, Rank participants,
                                     const CompiledMember& mine, CompiledExchangeOptions options) {
  return detail::CompiledEngine::prepare(comm, key, participants, &mine, options);
}

}  // namespace switchyard

namespace switchyard {

std::shared_ptr<CompiledProgramCache> make_compiled_program_cache() { return std::make_shared<CompiledProgramCache>(); }

}  // namespace switchyard

namespace switchyard {

bool extend_strided(CopyStep& run, const CopyStep& next) noexcept {
  if (next.count != 1 || run.src != next.src || run.dst != next.dst || run.src_region != next.src_region ||
      run.dst_region != next.dst_region || run.bytes != next.bytes || run.phase != next.phase) {
    return false;
  }
  if (run.count == 1) {
    if (next.src_offset <= run.src_offset || next.dst_offset <= run.dst_offset) return false;
    run.src_stride = next.src_offset - run.src_offset;
    run.dst_stride = next.dst_offset - run.dst_offset;
    run.count = 2;
    return true;
  }
  if (run.count == ~std::uint32_t{0} || next.src_offset != run.src_offset + run.count * run.src_stride ||
      next.dst_offset != run.dst_offset + run.count * run.dst_stride) {
    return false;
  }
  ++run.count;
  return true;
}

}  // namespace switchyard
