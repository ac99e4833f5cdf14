// detail::Mailbox: MPI-style matching of arrived messages and posted receives,
// plus the Message / ByteBuffer value types it hands out.

#include <switchyard/message.hpp>
#include "mailbox.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace {

using switchyard::kAnySource;
using switchyard::Message;
using switchyard::Rank;
using switchyard::Tag;
using switchyard::detail::ByteBuffer;
using switchyard::detail::Envelope;
using switchyard::detail::Mailbox;
using switchyard::detail::RecvState;

// Envelopes as the endpoint makes them: an eager payload, encoding (src, tag,
// seq), staged in memory the harness owns. Addresses stay stable.
class Envelopes {
 public:
  Envelope* make(Rank src, Tag tag, std::uint64_t seq, std::size_t size = 24) {
    auto& bytes = payloads_.emplace_back(size);
    sytest::fill_pattern(bytes.data(), size, sytest::message_key(src, 0, seq, tag));
    Envelope& e = envelopes_.emplace_back();
    e.src = src;
    e.tag = tag;
    e.size = size;
    e.staged = bytes.data();
    return &e;
  }

 private:
  std::deque<std::vector<std::byte>> payloads_;
  std::deque<Envelope> envelopes_;
};

std::string check_envelope(const Envelope* e, Rank src, Tag tag, std::uint64_t seq, std::size_t size = 24) {
  if (!e) return "no envelope";
  if (e->src != src) return "src " + std::to_string(e->src) + " != " + std::to_string(src);
  if (e->tag != tag) return "tag " + std::to_string(e->tag) + " != " + std::to_string(tag);
  if (e->size != size) return "size mismatch";
  if (sytest::first_mismatch({e->staged, size}, sytest::message_key(src, 0, seq, tag)) != std::string::npos) {
    return "payload is not message " + std::to_string(seq) + " of rank " + std::to_string(src);
  }
  return {};
}

RecvState recv_state(Rank src, Tag tag) {
  RecvState r;
  r.src = src;
  r.tag = tag;
  return r;
}

TEST(Mailbox, UnexpectedMessagesWaitUntilPosted) {
  Mailbox mb;
  Envelopes es;
  EXPECT_EQ(mb.arrive(es.make(3, 0, 0)), nullptr);
  EXPECT_EQ(mb.arrive(es.make(3, 0, 1)), nullptr);
  EXPECT_EQ(mb.unexpected_count(), 2u);
  EXPECT_EQ(mb.posted_count(), 0u);
  RecvState r = recv_state(3, 0);
  EXPECT_EQ(check_envelope(mb.post(&r), 3, 0, 0), "") << "oldest first";
  RecvState r2 = recv_state(3, 0);
  EXPECT_EQ(check_envelope(mb.post(&r2), 3, 0, 1), "");
  EXPECT_EQ(mb.unexpected_count(), 0u);
}

TEST(Mailbox, PostedReceivesMatchArrivalsInPostOrder) {
  Mailbox mb;
  Envelopes es;
  RecvState a = recv_state(1, 0), b = recv_state(1, 0), c = recv_state(1, 0);
  EXPECT_EQ(mb.post(&a), nullptr);
  EXPECT_EQ(mb.post(&b), nullptr);
  EXPECT_EQ(mb.post(&c), nullptr);
  EXPECT_EQ(mb.posted_count(), 3u);
  EXPECT_EQ(mb.arrive(es.make(1, 0, 0)), &a);
  EXPECT_EQ(mb.arrive(es.make(1, 0, 1)), &b);
  EXPECT_EQ(mb.arrive(es.make(1, 0, 2)), &c);
  EXPECT_EQ(mb.posted_count(), 0u);
  EXPECT_EQ(mb.unexpected_count(), 0u);
}

TEST(Mailbox, SpecificSourceSkipsOtherSources) {
  Mailbox mb;
  Envelopes es;
  mb.arrive(es.make(5, 0, 0));
  mb.arrive(es.make(6, 0, 0));
  mb.arrive(es.make(5, 0, 1));
  RecvState r6 = recv_state(6, 0);
  EXPECT_EQ(check_envelope(mb.post(&r6), 6, 0, 0), "");
  RecvState r7 = recv_state(7, 0);
  EXPECT_EQ(mb.post(&r7), nullptr) << "no message from rank 7";
  RecvState r5a = recv_state(5, 0), r5b = recv_state(5, 0);
  EXPECT_EQ(check_envelope(mb.post(&r5a), 5, 0, 0), "");
  EXPECT_EQ(check_envelope(mb.post(&r5b), 5, 0, 1), "");
  // A message from 5 does not complete the receive waiting for 7.
  EXPECT_EQ(mb.arrive(es.make(5, 0, 2)), nullptr);
  EXPECT_EQ(mb.arrive(es.make(7, 0, 0)), &r7);
}

TEST(Mailbox, AnySourceTakesTheOldestMessage) {
  Mailbox mb;
  Envelopes es;
  mb.arrive(es.make(9, 0, 0));
  mb.arrive(es.make(2, 0, 0));
  mb.arrive(es.make(9, 0, 1));
  std::vector<std::pair<Rank, std::uint64_t>> want{{9, 0}, {2, 0}, {9, 1}};
  for (auto [src, seq] : want) {
    RecvState r = recv_state(kAnySource, 0);
    EXPECT_EQ(check_envelope(mb.post(&r), src, 0, seq), "");
  }
  // Posted any-source receives are also served oldest first, from any sender.
  RecvState a = recv_state(kAnySource, 0), b = recv_state(kAnySource, 0);
  mb.post(&a);
  mb.post(&b);
  EXPECT_EQ(mb.arrive(es.make(4, 0, 0)), &a);
  EXPECT_EQ(mb.arrive(es.make(1, 0, 0)), &b);
}

TEST(Mailbox, OldestAcceptingPostedReceiveWinsAcrossSpecificAndAny) {
  Mailbox mb;
  Envelopes es;
  RecvState specific = recv_state(3, 0), any = recv_state(kAnySource, 0);
  mb.post(&specific);
  mb.post(&any);
  // From 8: only `any` accepts.
  EXPECT_EQ(mb.arrive(es.make(8, 0, 0)), &any);
  // From 3: `specific` is the oldest that accepts.
  EXPECT_EQ(mb.arrive(es.make(3, 0, 0)), &specific);
  // Both accept a message from 3: whichever was posted first takes it, in
  // either order.
  RecvState named = recv_state(3, 0), wildcard = recv_state(kAnySource, 0);
  mb.post(&named);
  mb.post(&wildcard);
  EXPECT_EQ(mb.arrive(es.make(3, 0, 1)), &named);
  EXPECT_EQ(mb.arrive(es.make(3, 0, 2)), &wildcard);
  mb.post(&wildcard);
  mb.post(&named);
  EXPECT_EQ(mb.arrive(es.make(3, 0, 3)), &wildcard);
  EXPECT_EQ(mb.arrive(es.make(3, 0, 4)), &named);
}

TEST(Mailbox, TagsKeepStreamsApart) {
  Mailbox mb;
  Envelopes es;
  mb.arrive(es.make(1, 7, 0));
  mb.arrive(es.make(1, 3, 0));
  mb.arrive(es.make(1, 7, 1));
  RecvState t3 = recv_state(1, 3);
  EXPECT_EQ(check_envelope(mb.post(&t3), 1, 3, 0), "");
  RecvState t5 = recv_state(kAnySource, 5);
  EXPECT_EQ(mb.post(&t5), nullptr) << "no message with tag 5";
  RecvState t7a = recv_state(kAnySource, 7), t7b = recv_state(1, 7);
  EXPECT_EQ(check_envelope(mb.post(&t7a), 1, 7, 0), "");
  EXPECT_EQ(check_envelope(mb.post(&t7b), 1, 7, 1), "");
  EXPECT_EQ(mb.arrive(es.make(2, 0, 0)), nullptr) << "tag 0 must not complete a tag-5 receive";
  EXPECT_EQ(mb.arrive(es.make(2, 5, 0)), &t5);
}

TEST(Mailbox, ContextsKeepCommunicatorsApart) {
  Mailbox mb;
  Envelopes es;
  RecvState on_one = recv_state(1, 0);
  on_one.context = 1;
  mb.post(&on_one);
  EXPECT_EQ(mb.arrive(es.make(1, 0, 0)), nullptr) << "a message on context 0 must not match a receive on context 1";
  Envelope* e = es.make(1, 0, 1);
  e->context = 1;
  EXPECT_EQ(mb.arrive(e), &on_one);
  RecvState on_zero = recv_state(1, 0);
  EXPECT_EQ(check_envelope(mb.post(&on_zero), 1, 0, 0), "");
}

TEST(Mailbox, RendezvousEnvelopesKeepTheirSenderRequest) {
  Mailbox mb;
  std::vector<std::byte> sender_buffer(64);
  Envelope e;
  e.src = 4;
  e.tag = 1;
  e.size = 1 << 20;
  e.remote = sender_buffer.data();
  e.owes_send_done = true;
  e.request = 77;
  EXPECT_EQ(mb.arrive(&e), nullptr);
  RecvState r = recv_state(4, 1);
  Envelope* got = mb.post(&r);
  ASSERT_EQ(got, &e);
  EXPECT_EQ(got->remote, sender_buffer.data());
  EXPECT_TRUE(got->owes_send_done);
  EXPECT_EQ(got->request, 77u);
  EXPECT_EQ(got->size, 1u << 20);
}

TEST(Mailbox, ClearDropsEverything) {
  Mailbox mb;
  Envelopes es;
  mb.arrive(es.make(1, 0, 0));
  RecvState r = recv_state(2, 0);
  mb.post(&r);
  int dropped = 0;
  mb.clear([&](Envelope*) { ++dropped; });
  EXPECT_EQ(dropped, 1) << "every unexpected message is handed back";
  EXPECT_EQ(mb.unexpected_count(), 0u);
  EXPECT_EQ(mb.posted_count(), 0u);
  EXPECT_EQ(mb.arrive(es.make(2, 0, 0)), nullptr) << "a cleared posted receive must not match";
}

// Randomised check against a reference model: interleaved arrivals (from a few
// sources, on a few tags) and posts (specific or any source); every message is
// matched exactly once, and per (source, tag) in send order.
TEST(Mailbox, RandomisedAgainstReferenceModel) {
  std::mt19937_64 rng(12345);
  Mailbox mb;
  Envelopes es;
  std::deque<RecvState> receives;  // stable addresses
  std::map<std::pair<Rank, Tag>, std::uint64_t> sent, taken;
  std::uint64_t arrived_total = 0, matched_total = 0;
  auto record = [&](const RecvState& r, const Envelope* e) -> std::string {
    const auto key = std::make_pair(e->src, e->tag);
    const std::uint64_t seq = taken[key]++;
    ++matched_total;
    if (!(r.src == kAnySource || r.src == e->src)) return "receive from wrong source";
    if (r.tag != e->tag) return "receive with wrong tag";
    return check_envelope(e, e->src, e->tag, seq, e->size);
  };
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 2) {
      const Rank src = static_cast<Rank>(rng() % 4);
      const Tag tag = static_cast<Tag>(rng() % 3);
      const std::size_t size = rng() % 100;
      Envelope* e = es.make(src, tag, sent[{src, tag}]++, size);
      RecvState* r = mb.arrive(e);
      ++arrived_total;
      if (r) {
        ASSERT_EQ(record(*r, e), "") << "step " << step;
      }
    } else {
      const Rank src = rng() % 3 == 0 ? kAnySource : static_cast<Rank>(rng() % 4);
      RecvState& r = receives.emplace_back(recv_state(src, static_cast<Tag>(rng() % 3)));
      if (Envelope* e = mb.post(&r)) {
        ASSERT_EQ(record(r, e), "") << "step " << step;
      }
    }
  }
  EXPECT_EQ(arrived_total, matched_total + mb.unexpected_count());
  EXPECT_EQ(receives.size(), matched_total + mb.posted_count());
}

TEST(Message, ByteBufferInlineAndHeap) {
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, ByteBuffer::kInlineBytes, ByteBuffer::kInlineBytes + 1, std::size_t{100000}}) {
    ByteBuffer b(n);
    EXPECT_EQ(b.size(), n);
    sytest::fill_pattern(b.data(), n, n);
    ByteBuffer moved(std::move(b));
    EXPECT_EQ(moved.size(), n);
    EXPECT_EQ(b.size(), 0u);
    EXPECT_EQ(sytest::first_mismatch({moved.data(), n}, n), std::string::npos) << n << " bytes";
    ByteBuffer assigned;
    assigned = std::move(moved);
    EXPECT_EQ(sytest::first_mismatch({assigned.data(), n}, n), std::string::npos) << n << " bytes";
    Message m(3, 9, std::move(assigned));
    EXPECT_EQ(m.source(), 3u);
    EXPECT_EQ(m.tag(), 9u);
    EXPECT_EQ(m.size(), n);
    EXPECT_EQ(sytest::first_mismatch(m.bytes(), n), std::string::npos) << n << " bytes";
  }
}

}  // namespace
