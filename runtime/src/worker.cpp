#include "switchyard/detail/worker.hpp"

#include <algorithm>
#include <cstring>

#include "switchyard/detail/job.hpp"

namespace switchyard::detail {

namespace {
constexpr std::size_t kBatch = 64;  // packets drained from one ring at a time
constexpr auto kIdleSleep = std::chrono::milliseconds(100);
constexpr auto kBacklogSleep = std::chrono::microseconds(50);
}  // namespace

Worker::Worker(std::uint32_t index, int os_core, const Topology& topology, bool bind)
    : topology_(topology), index_(index), os_core_(os_core), bind_(bind), batch_(kBatch) {
  thread_ = std::thread([this] { thread_main(); });
}

Worker::~Worker() {
  shared_.stop.store(true, std::memory_order_release);  // pairs with the acquire load in thread_main
  wake();
  thread_.join();
}

std::string Worker::binding() const {
  return "worker " + std::to_string(index_) + " on core " + std::to_string(os_core_) + ": bound to CPU set " +
         topology_.thread_binding(const_cast<std::thread&>(thread_).native_handle()) +
         (bound_.load(std::memory_order_acquire) ? "" : " (binding refused by the OS)");
}

void Worker::wait_started() const { published_.started.wait(false, std::memory_order_acquire); }

void Worker::start(Job* job) {
  shared_.next_job.store(job, std::memory_order_release);  // publishes the fully built Job to this thread
  wake();
}

void Worker::wake() {
  // Dekker pair with sleep(): the waker publishes its work, then reads `sleeping`;
  // the sleeper publishes `sleeping`, then looks for work. With a full fence on
  // both sides at least one of them sees the other's store, so no wake-up is lost.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (shared_.sleeping.load(std::memory_order_relaxed) && shared_.sleeping.exchange(false, std::memory_order_acq_rel)) {
    shared_.wakeup.release();
  }
}

void Worker::sleep(std::chrono::microseconds max) {
  shared_.sleeping.store(true, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // see wake()
  if (has_pending_work() || !shared_.wakeup.try_acquire_for(max)) {
    // Nobody has woken us. If a waker did clear `sleeping` meanwhile, its release
    // is on the way: take it, so that the next sleep does not return at once.
    if (!shared_.sleeping.exchange(false, std::memory_order_acq_rel)) shared_.wakeup.acquire();
  }
}

bool Worker::has_pending_work() {
  if (shared_.stop.load(std::memory_order_acquire) || shared_.next_job.load(std::memory_order_acquire)) return true;
  if (!job_) return false;
  if (job_->remaining.load(std::memory_order_acquire) == 0) return true;
  if (!cancel_seen_ && job_->cancelled.load(std::memory_order_acquire)) return true;
  if (cancel_seen_ && !cancel_released_ && job_->quiesced.load(std::memory_order_acquire) == job_->worker_count()) return true;
  for (auto& in : in_) {
    if (in.ring && in.ring->has_packets()) return true;
  }
  return false;
}

void Worker::thread_main() {
  bound_.store(!bind_ || topology_.bind_this_thread(os_core_), std::memory_order_relaxed);
  published_.started.store(true, std::memory_order_release);  // pairs with wait_started(): bound_ is final
  published_.started.notify_all();
  for (;;) {
    if (shared_.stop.load(std::memory_order_acquire)) return;
    if (Job* job = shared_.next_job.exchange(nullptr, std::memory_order_acquire)) {
      job_ = job;
      run_job();
      job_ = nullptr;
      continue;
    }
    sleep(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::seconds(1)));
  }
}

const std::vector<Process*>& Worker::local_processes() const { return job_->local_processes(index_); }

void Worker::run_job() {
  Job& job = *job_;
  const std::uint32_t workers = job.worker_count();
  out_.clear();
  in_.clear();
  out_.resize(workers);
  in_.resize(workers);
  for (std::uint32_t w = 0; w < workers; ++w) {
    if (w == index_) continue;
    out_[w].ring = job.channel(index_, w);
    in_[w].ring = job.channel(w, index_);
  }
  cancel_seen_ = cancel_released_ = false;
  backlog_packets_ = 0;
  resumes_ = packets_ = mailbox_full_ = 0;
  for (Process* p : local_processes()) {
    p->resume_point_ = p->main_.handle();
    ready_.push_back(p);
  }

  Backoff backoff;
  for (;;) {
    bool worked = poll_inbound();
    if (backlog_packets_) worked |= flush_outbound();
    if (!cancel_released_ && job.cancelled.load(std::memory_order_acquire)) worked |= handle_cancel();
    const bool may_resume = !cancel_seen_ || cancel_released_;
    if (may_resume && !local_active_.empty()) worked |= run_local_active();
    if (may_resume && !ready_.empty()) {
      Process* p = ready_.front();
      ready_.pop_front();
      resume(p);
      backoff.reset();
      continue;
    }
    if (job.remaining.load(std::memory_order_acquire) == 0) break;
    if (worked) {
      backoff.reset();
      continue;
    }
    backoff.wait([&] { sleep(backlog_packets_ ? std::chrono::microseconds(kBacklogSleep) : kIdleSleep); });
  }
  leave_job();
}

void Worker::leave_job() {
  // Packets still in the rings are plain bytes owned by the rings; they go with the Job.
  ready_.clear();
  out_.clear();
  in_.clear();
  local_active_.clear();
  Job& job = *job_;
  // acq_rel: the last worker out sees everything the others did in the job.
  if (job.workers_inside.fetch_sub(1, std::memory_order_acq_rel) == 1) job.left.release();
}

bool Worker::handle_cancel() {
  Job& job = *job_;
  if (!cancel_seen_) {
    cancel_seen_ = true;
    if (job.quiesced.fetch_add(1, std::memory_order_acq_rel) + 1 == job.worker_count()) job.wake_all_workers();
  }
  if (job.quiesced.load(std::memory_order_acquire) < job.worker_count()) return false;
  cancel_released_ = true;
  const bool stalled = job.stalled();
  for (Process* p : local_processes()) {
    if (p->finished_) continue;
    if (stalled && p->parked_) {
      std::string line = "rank " + std::to_string(p->rank()) + " (core " + std::to_string(os_core_) + ") waits for " +
                         (p->waiting_for_ ? p->waiting_for_ : "an event");
      if (p->waiting_peer_ != kAnySource) line += " rank " + std::to_string(p->waiting_peer_);
      job.add_stall_report(p->rank(), std::move(line));
    }
    p->wake();  // it throws JobCancelled where it waits, and unwinds
  }
  return true;
}

void Worker::resume(Process* p) {
  if (cancel_released_ && !p->started_) {  // never started: nothing to unwind
    finish(p);
    return;
  }
  p->started_ = true;
  ++resumes_;
  // Single writer: a relaxed store is enough, the watchdog only compares snapshots.
  const auto tick = published_.progress.load(std::memory_order_relaxed);
  published_.progress.store(tick + 1, std::memory_order_relaxed);
  p->resume_point_.resume();
  published_.progress.store(tick + 2, std::memory_order_relaxed);
  if (p->main_.handle().done()) finish(p);
}

void Worker::finish(Process* p) {
  p->finished_ = true;
  if (p->started_) {
    if (std::exception_ptr error = p->main_.handle().promise().error) {
      try {
        std::rethrow_exception(error);
      } catch (const JobCancelled&) {
      } catch (...) {
        job_->fail(error);
      }
    }
  }
  if (job_->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) job_->wake_all_workers();
}

bool Worker::poll_inbound() {
  bool any = false;
  for (auto& in : in_) {
    if (!in.ring) continue;
    for (;;) {
      const std::size_t n = in.ring->pop(batch_.data(), batch_.size());
      if (n == 0) break;
      any = true;
      packets_ += n;
      for (std::size_t i = 0; i < n; ++i) on_packet(in, batch_[i]);
      if (n < batch_.size()) break;
    }
  }
  return any;
}

void Worker::on_packet(Inbound& in, const Packet& p) {
  if (in.assembling) {
    const std::uint64_t take = std::min<std::uint64_t>(kCacheLine, in.header.size - in.filled);
    std::memcpy(in.body.data() + in.filled, p.continuation.data(), take);
    in.filled += take;
    if (in.filled == in.header.size) {
      in.assembling = false;
      dispatch(in.header, std::move(in.body));
    }
    return;
  }
  const PacketHeader& h = p.head.header;
  if (h.kind == PacketKind::kSendDone) {
    auto* s = static_cast<SendState*>(h.handle);
    s->done = true;
    static_cast<Process*>(s->owner)->notify();
    return;
  }
  if (h.kind == PacketKind::kMessage && h.single_copy) {
    dispatch(h, ByteBuffer{});
    return;
  }
  ByteBuffer body(h.size);
  const std::uint64_t first = std::min<std::uint64_t>(h.size, kHeaderInlineBytes);
  std::memcpy(body.data(), p.head.inline_bytes.data(), first);
  if (first == h.size) {
    dispatch(h, std::move(body));
    return;
  }
  in.assembling = true;
  in.header = h;
  in.body = std::move(body);
  in.filled = first;
}

void Worker::dispatch(const PacketHeader& h, ByteBuffer&& body) {
  Process& q = job_->process(h.dst);
  if (h.kind == PacketKind::kActive) {
    if (cancel_seen_) return;
    try {
      // The handler sees the sender as the message's communicator numbers it.
      const Rank src = h.context == 0 ? h.src : job_->groups().find(h.context)->members().to_comm(h.src);
      (*job_->handler(h.tag))(q, src, {body.data(), static_cast<std::size_t>(body.size())});
    } catch (...) {
      job_->fail(std::current_exception());
    }
    q.notify();
    return;
  }
  Envelope e;
  e.context = h.context;
  e.src = h.src;
  e.tag = h.tag;
  e.size = h.size;
  if (h.single_copy) {
    e.single_copy = static_cast<SendState*>(h.handle);
  } else {
    e.eager = std::move(body);
  }
  if (h.synchronous) e.completes = static_cast<SendState*>(h.handle);
  q.deliver(std::move(e));
}

std::uint64_t Worker::enqueue(std::uint32_t to, const PacketHeader& header, const std::byte* eager, std::uint64_t eager_bytes) {
  Outbound& out = out_[to];
  const std::uint64_t count = packets_for(eager_bytes);
  if (count == 1 && out.backlog.empty()) {
    // The common small message: one packet, built in place, no scratch buffer.
    Packet p;
    p.head.header = header;
    if (eager_bytes) std::memcpy(p.head.inline_bytes.data(), eager, eager_bytes);
    ++out.enqueued;
    if (out.ring->push(p)) {
      ++out.pushed;
      job_->worker(to).wake();
    } else {
      ++mailbox_full_;
      ++backlog_packets_;
      out.backlog.push_back(p);
    }
    return out.enqueued;
  }
  scratch_.resize(count);
  scratch_[0].head.header = header;
  const std::uint64_t first = std::min<std::uint64_t>(eager_bytes, kHeaderInlineBytes);
  if (first) std::memcpy(scratch_[0].head.inline_bytes.data(), eager, first);
  for (std::uint64_t i = 1, offset = first; i < count; ++i, offset += kCacheLine) {
    std::memcpy(scratch_[i].continuation.data(), eager + offset, std::min<std::uint64_t>(kCacheLine, eager_bytes - offset));
  }
  out.enqueued += count;
  std::size_t accepted = 0;
  if (out.backlog.empty()) accepted = out.ring->push(scratch_.data(), count);
  if (accepted < count) {
    ++mailbox_full_;
    backlog_packets_ += count - accepted;
    out.backlog.insert(out.backlog.end(), scratch_.begin() + static_cast<std::ptrdiff_t>(accepted), scratch_.end());
  }
  if (accepted) {
    out.pushed += accepted;
    job_->worker(to).wake();
  }
  return out.enqueued;
}

bool Worker::flush_outbound() {
  bool any = false;
  for (std::uint32_t to = 0; to < out_.size(); ++to) {
    Outbound& out = out_[to];
    if (out.backlog.empty()) continue;
    const std::uint64_t before = out.pushed;
    while (!out.backlog.empty() && out.ring->push(out.backlog.front())) {
      out.backlog.pop_front();
      ++out.pushed;
      --backlog_packets_;
    }
    if (out.pushed == before) continue;
    any = true;
    job_->worker(to).wake();
    while (!out.waiting.empty() && out.waiting.front()->ring_seq <= out.pushed) {
      SendState* s = out.waiting.front();
      out.waiting.pop_front();
      s->done = true;
      static_cast<Process*>(s->owner)->notify();
    }
  }
  return any;
}

void Worker::queue_local_active(ContextId context, Rank dst, Rank src, HandlerId id, std::span<const std::byte> body) {
  ByteBuffer copy(body.size());
  if (!body.empty()) std::memcpy(copy.data(), body.data(), body.size());
  local_active_.push_back(LocalActive{context, dst, src, id, std::move(copy)});
}

bool Worker::run_local_active() {
  if (local_active_.empty()) return false;
  // Handlers may queue more active messages; those run on the next round.
  std::vector<LocalActive> round;
  round.swap(local_active_);
  for (auto& a : round) {
    PacketHeader h{};
    h.kind = PacketKind::kActive;
    h.context = a.context;
    h.tag = a.id;
    h.src = a.src;
    h.dst = a.dst;
    h.size = a.body.size();
    dispatch(h, std::move(a.body));
  }
  return true;
}

}  // namespace switchyard::detail
