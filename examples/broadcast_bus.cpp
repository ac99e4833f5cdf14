// A broadcast bus in a threaded program (switchyard::dynamic, real mode).
//
// Four application threads, one per bus node, each do work of their own (a
// running sum), publish a small update on the bus now and then, and read the
// updates the others published, while the bus runs on a switchyard Runtime in
// a thread of its own. Direct broadcasting carries the updates on the
// hypercube's edge-disjoint spanning trees. At the end the bus is stopped: it
// drains, and every thread must have read every update of every other thread,
// byte for byte. The exit code is 0 only if it did.

#include <switchyard/dynamic/real_pipeline.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sy = switchyard;
namespace syd = switchyard::dynamic;

// [readme-begin]
// What one node's application thread has received: the bus's callback (on the
// node's core) appends, the thread takes, both under the mutex.
struct Inbox {
  std::mutex mutex;
  std::deque<std::vector<std::byte>> updates;
};

struct Update {
  std::uint32_t author;
  std::uint32_t number;
  double value;
};

int main() {
  constexpr sy::Rank kNodes = 4;  // a 2-cube: 2 nodes per dimension
  constexpr std::uint32_t kUpdates = 200;
  sy::Runtime runtime;
  std::vector<Inbox> inboxes(kNodes);

  syd::RealPipelineOptions options;
  options.scheme = syd::DynamicScheme::direct_broadcast;
  options.network = sy::primitives::VirtualNetwork::hypercube(2);
  options.rate = 0;  // fed by the application
  options.payload_bytes = sizeof(Update);
  options.deliver = [&](const syd::Delivery& d) {
    std::lock_guard lock(inboxes[d.node].mutex);
    inboxes[d.node].updates.emplace_back(d.payload.begin(), d.payload.end());
  };
  syd::RealPipeline bus(options);
  std::atomic<int> bad{0};
  std::thread bus_thread([&] {
    try {
      bus.run(runtime);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bus: %s\n", e.what());
      ++bad;
    }
  });

  // Each application thread: work, publish, read, until it has published all
  // its updates; what is still on its way it reads once the bus has drained.
  std::vector<std::vector<std::uint32_t>> seen(kNodes, std::vector<std::uint32_t>(kNodes, 0));
  const auto read = [&](sy::Rank me) {
    std::lock_guard lock(inboxes[me].mutex);
    for (const auto& bytes : inboxes[me].updates) {
      Update u;
      std::memcpy(&u, bytes.data(), sizeof u);
      // Per author, the updates may come in any order (several trees): count them, check the value.
      bad += u.author >= kNodes || u.author == me || u.value != u.number * 0.5 + u.author;
      if (u.author < kNodes) ++seen[me][u.author];
    }
    inboxes[me].updates.clear();
  };
  std::vector<std::thread> app;
  for (sy::Rank me = 0; me < kNodes; ++me) {
    app.emplace_back([&, me] {
      double work = 0;
      for (std::uint32_t n = 0; n < kUpdates; ++n) {
        for (int i = 0; i < 20000; ++i) work += 1e-9 * i;  // the thread's own work
        const Update u{me, n, n * 0.5 + me};
        bus.feed(me, std::as_bytes(std::span(&u, 1)));
        read(me);
      }
      bad += work < 0;
    });
  }
  for (auto& t : app) t.join();
  bus.stop();  // drains: every update fed so far reaches every other node
  bus_thread.join();
  for (sy::Rank me = 0; me < kNodes; ++me) {
    read(me);
    for (sy::Rank author = 0; author < kNodes; ++author) {
      bad += author != me && seen[me][author] != kUpdates;
    }
  }
  std::printf("broadcast bus: %u nodes, %u updates each, %s\n", kNodes, kUpdates, bad ? "WRONG" : "all received");
  return bad ? 1 : 0;
}
// [readme-end]
