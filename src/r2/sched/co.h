// Co: what a coroutine body holds. Every call that waits suspends only this
// coroutine; its worker's event loop runs the others, serves incoming RPCs,
// and resumes this one when all its completions or replies are in.
//
// A Co is used only from inside its own coroutine (its worker's thread).
// Local buffers of one-sided ops must lie in registered memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/sched/op_batch.h"
#include "r2/sched/rpc.h"

namespace drtmx::r2 {

class Worker;

class Co {
 public:
  uint16_t id() const { return id_; }
  Worker& worker() { return *worker_; }
  NodeId node() const;
  ThreadId thread() const;

  // --- one-sided ------------------------------------------------------------
  // Posts the batch (one doorbell per peer) and waits for every signaled op.
  // Returns the first error (details per op in batch.status(i)).
  OpStatus run(OpBatch& batch);
  // Outstanding ops (speculative reads): post() posts the batch (one
  // doorbell per peer) and returns at once; the worker collects its
  // completions while this coroutine runs on; wait_posted() waits for every
  // signaled op of it and returns the first error. Contract: at most one
  // posted batch per coroutine; between post() and wait_posted() the
  // coroutine must not run(), read/write/cas/faa, call() or wait for
  // passive ACKs (those reuse the single wait slot and would drop the
  // posted batch's completions) — yield()/yield_idle() and plain
  // computation are fine; the batch and its local buffers must stay alive
  // until wait_posted() returns. A posted batch must be waited for.
  void post(OpBatch& batch);
  OpStatus wait_posted();
  bool posted() const { return posted_; }
  // Waits until every UNSIGNALED op this coroutine posted has retired
  // (Endpoint::posted/retired): until then the fabric may still read a
  // WRITE's source or write a READ's or an atomic's destination — on an
  // RNIC an unsignaled WRITE's source is read when the NIC gets to it,
  // after the post returned (passive ACK). Call it before reusing the
  // buffers of such ops (an engine, before it resets its arena for the
  // next transaction). Usually it waits for nothing: a later signaled op on
  // the same channel — this coroutine's or another's of this worker —
  // retired them. Otherwise it asks the channel to retire them
  // (retire_posted) and yields to the loop until they have; peers that are
  // no longer members are not waited for (their channels are torn down).
  // kTransportError if they have not within the worker's rpc timeout.
  // Must not be called between post() and wait_posted().
  OpStatus settle_unsignaled();
  OpStatus read(RemoteAddr from, void* to, uint32_t len);
  OpStatus write(RemoteAddr to, const void* from, uint32_t len);
  OpStatus cas(RemoteAddr at, uint64_t expected, uint64_t desired, uint64_t* old);
  OpStatus faa(RemoteAddr at, uint64_t add, uint64_t* old);
  // True when one-sided ops on node n run at once, without suspending
  // (n is this node and the worker executes local ops directly: see
  // WorkerConfig::direct_local_ops). Callers that yield to hide a cache
  // miss before such an op gain nothing by yielding: the op itself does not
  // wait, and every yield costs the coroutine a turn of all the others.
  // False too once this node is no longer a member in the worker's view:
  // the fabric refuses a removed node's ops on its own memory (fenced), and
  // callers that load that memory themselves instead of posting ops must
  // stop as the ops would.
  bool direct(NodeId n) const;

  // --- RPC ------------------------------------------------------------------
  // Sends one request to each target and waits for all replies; replies[i]
  // receives target i's reply. Fails on an error reply, a refused (too
  // large) request, or no reply within the worker's rpc timeout.
  Status call(std::span<const Target> targets, uint16_t rpc_id, const void* req, uint32_t len,
              std::span<RpcBuffer> replies);
  Status call(Target target, uint16_t rpc_id, const void* req, uint32_t len, RpcBuffer& reply);
  // As above, with its own request body per target (bodies[i] to targets[i]).
  Status call(std::span<const Target> targets, uint16_t rpc_id,
              std::span<const std::span<const uint8_t>> bodies, std::span<RpcBuffer> replies);
  // Fire-and-forget: the receiver's handler runs, no reply is sent; the
  // acknowledgement rides on later traffic back to this worker (passive
  // ACK). Waits only when the destination has `passive_window` messages
  // unacknowledged.
  Status send_passive(Target target, uint16_t rpc_id, const void* msg, uint32_t len);
  // Waits until every passive message this worker sent is acknowledged.
  Status wait_passive_acks();

  // Lets the other coroutines run; resumes at the next turn.
  void yield();
  // A point between two pieces of work (the engine calls it before each
  // transaction): yields when this worker ran a quarter of the periodic
  // yield's streak of ops or calls without suspending (local ops, inline
  // RPCs), so the other coroutines get their turns between transactions.
  // Without it they would get them only from the periodic yield (every
  // kInlineStreak), which lands in the middle of one: on one node two
  // coroutines' New-Orders then abort each other on STOCK rows read before
  // the yield. No effect when the worker suspended a few ops ago.
  void yield_at_boundary();
  // Work done in place of `ops` local operations without the fabric (reads
  // of this node's memory by the caller itself): counts toward the same
  // streak as inline ops and calls, and yields when it is reached (not
  // while urgent), so a long run of such work still lets pollers, messages
  // and the other coroutines in — a lock holder among them.
  void charge(uint32_t ops);
  // As yield(), for a coroutine that is only polling (waiting for a
  // condition it checks itself, or backing off): an iteration in which only
  // such coroutines ran counts as idle, so the worker backs off and leaves
  // the core to busy threads instead of spinning through its time slice.
  void yield_idle();
  // Suspends this coroutine until another coroutine of the same worker
  // calls unpark(id()) or the clock passes `deadline_ns` (> 0; r2::now_ns();
  // checked every few worker iterations, so it may be late by a little).
  // Not work: a worker whose coroutines are all parked or waiting backs off
  // like an idle one. Returns true when unparked, false at the deadline. A
  // wake-up may be spurious: re-check the condition waited for.
  bool park_until(uint64_t deadline_ns);
  // Makes coroutine `co` of this worker runnable if it is parked (no
  // effect otherwise).
  void unpark(uint16_t co);
  // While set, this coroutine goes to the front of the run queue whenever
  // it becomes runnable (a completion, a reply, an unpark) instead of the
  // back, and a wait for its ops polls the completions once before it
  // suspends (ops a fabric completes at the doorbell, shm without a delay,
  // then need no suspension at all): for work that others wait for, e.g. a
  // transaction holding locks, so it is not held up by a turn of every
  // other coroutine.
  void set_urgent(bool urgent);
  // While set, this coroutine goes to the front of the run queue whenever
  // it becomes runnable, and also at its periodic yields (a run of inline
  // ops or calls, charge()): the loop then ends its iteration, polls
  // completions, messages and pollers, and resumes it before the
  // coroutines queued. yield() still lets the others in (a spin-wait for a
  // condition another coroutine sets must). For a long read-only
  // transaction: a snapshot holds back version GC for as long as it runs,
  // and an OCC reader's chance to abort at validation grows with its
  // duration, while the turns of the others would only stretch it. The
  // others wait for it at most its duration; urgent ones made runnable
  // meanwhile still go before it.
  void set_leading(bool leading);

 private:
  friend class Worker;
  Co() = default;
  Worker* worker_ = nullptr;
  uint16_t id_ = 0;
  OpBatch single_;  // reused by read/write/cas/faa
  bool posted_ = false;
};

}  // namespace drtmx::r2
