// Membership and Group: one communicator's members, and the state its processes share.

#include "group.hpp"

#include <algorithm>

#include "switchyard/splitmix64.hpp"

namespace switchyard::detail {

Rank Membership::to_comm(Rank job) const noexcept {
  if (by_job_rank.empty()) return job < size ? job : kAnySource;
  auto it = std::lower_bound(by_job_rank.begin(), by_job_rank.end(), std::make_pair(job, Rank{0}));
  return it != by_job_rank.end() && it->first == job ? it->second : kAnySource;
}

void* MemberPages::take(std::uint32_t core, bool here, std::size_t lines) {
  const std::lock_guard lock(mutex_);
  Room& r = room(core, here);
  if (auto it = r.given_back.find(lines); it != r.given_back.end() && !it->second.empty()) {
    void* const taken = it->second.back();
    it->second.pop_back();
    return taken;
  }
  const std::size_t bytes = lines * kCacheLine;
  if (bytes > r.bytes_left) {
    const std::size_t chunk = std::max(kChunkBytes, (bytes + kPageBytes - 1) / kPageBytes * kPageBytes);
    chunks_.reserve(chunks_.size() + 1);
    r.next = static_cast<std::byte*>(::operator new (chunk, std::align_val_t{kPageBytes}));
    chunks_.push_back(r.next);
    r.bytes_left = chunk;
  }
  void* const taken = r.next;
  r.next += bytes;
  r.bytes_left -= bytes;
  return taken;
}

void MemberPages::give_back(std::uint32_t core, bool here, void* first, std::size_t lines) {
  const std::lock_guard lock(mutex_);
  room(core, here).given_back[lines].push_back(first);
}

Group::Group(ContextId context, std::shared_ptr<const Membership> members, std::uint64_t library_key,
             MemberPages& pages)
    : context_(context),
      members_(std::move(members)),
      library_key_(library_key),
      member_pages_(pages),
      members_state_(members_->cores, pages),
      cores_(std::make_unique<CoreState[]>(members_->local.size())),
      reached_(std::make_unique<CoreReached[]>(members_->local.size())) {}

Group::~Group() { delete[] locks_.load(std::memory_order_relaxed); }

BusyLock& Group::busy_lock(Rank comm_rank) const {
  BusyLock* locks = locks_.load(std::memory_order_acquire);
  if (!locks) {
    auto* made = new BusyLock[members_->size];
    if (locks_.compare_exchange_strong(locks, made, std::memory_order_acq_rel, std::memory_order_acquire)) {
      locks = made;
    } else {
      delete[] made;  // another process was first; `locks` now holds its array
    }
  }
  return locks[comm_rank];
}

namespace {
std::size_t attachment_slot(std::uint64_t key, std::size_t probe) noexcept {
  return static_cast<std::size_t>(splitmix64(key) + probe) & (Group::kCachedAttachments - 1);
}
}  // namespace

GroupAttachment* Group::cached_attachment(std::uint64_t key) const noexcept {
  for (std::size_t probe = 0; probe < kCachedAttachments; ++probe) {
    const CachedAttachment& slot = attachment_cache_[attachment_slot(key, probe)];
    GroupAttachment* a = slot.value.load(std::memory_order_acquire);
    if (!a) return nullptr;
    if (slot.key.load(std::memory_order_relaxed) == key) return a;
  }
  return nullptr;
}

void Group::cache_attachment(std::uint64_t key, GroupAttachment* a) const noexcept {
  for (std::size_t probe = 0; probe < kCachedAttachments; ++probe) {
    CachedAttachment& slot = attachment_cache_[attachment_slot(key, probe)];
    if (!slot.value.load(std::memory_order_relaxed)) {
      slot.key.store(key, std::memory_order_relaxed);
      slot.value.store(a, std::memory_order_release);  // pairs with the acquire in cached_attachment
      return;
    }
  }
}

bool Group::cache_library(const Group* g) const noexcept {
  for (auto& slot : libraries_) {
    if (!slot.load(std::memory_order_relaxed)) {
      slot.store(g, std::memory_order_release);
      return true;
    }
  }
  return false;
}

}  // namespace switchyard::detail
