// The market exchange emulator (MEE, clause 4.2 / 6.x) of one node, shared
// by the node's clients: Trade-Order and Market-Feed hand it submitted
// trades, and a later Trade-Result drawn by any client of the node takes
// one and completes it at its price; completed trades go onto the ticker
// tape that the next Market-Feed reports (with the emulated prices of the
// moment), which in turn triggers pending limit orders.
//
// Prices move as a deterministic function of the wall clock: each
// security's price is its base price times a triangle wave of +-10 % with a
// 20 s period and a per-security phase, so limit orders placed around the
// base price trigger within seconds.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "tpce/tpce_gen.h"
#include "tpce/tpce_txns.h"

namespace drtmx::bench::tpce {

class Market {
 public:
  Market(uint64_t seed, uint32_t securities) : seed_(seed), securities_(securities) {}

  // The emulated price of security s at wall-clock time now_ms (cents).
  static int64_t price(uint64_t seed, uint32_t s, int64_t now_ms);

  // A trade was submitted (a committed Trade-Order's market order, a
  // committed Market-Feed's triggered limit order, or one handed back).
  void submit(const Submitted& t);
  // Takes the oldest submitted trade for a Trade-Result; false when none.
  bool take(Submitted* out);
  // A Trade-Result committed: the trade goes onto the ticker tape.
  void completed(const Submitted& t);
  // Up to `n` ticks for a Market-Feed on `node` of `nodes`: the tape's
  // oldest entries of the securities of units whose primary is `node`,
  // then random securities of those units, at the prices of `now_ms`. Each
  // node's feed reports its own units' securities (as exchanges list
  // disjoint symbols), so the feeds of different nodes never write the same
  // LAST_TRADE rows and a feed's writes to them are local.
  std::vector<Tick> ticker(Rng& r, int64_t now_ms, size_t n, uint32_t node, uint32_t nodes);
  size_t waiting() const;

 private:
  const uint64_t seed_;
  const uint32_t securities_;
  mutable std::mutex mu_;
  std::deque<Submitted> results_;
  std::deque<Tick> tape_;
};

}  // namespace drtmx::bench::tpce
