// The fabric: the one narrow interface between drtmx and the network.
//
// A Fabric is one node's view of the cluster. It owns the node's registered
// memory regions and one Endpoint per worker thread. Three backends implement it
// (selected at run time, see make_fabric in fabric_factory.h):
//   ucx   — UCX (UCP): one-sided PUT/GET/atomics and active messages over
//           whatever transport UCX picks (tcp, shared memory, RDMA NICs);
//           see r2/ucx/README.md.
//   shm   — regions are shared-memory segments mapped by every node on the
//           host; the issuing thread executes one-sided ops directly on the
//           target's memory, so the target's CPU is never involved.
//   verbs — rdma-core: per-thread device context, one RC QP per peer for
//           one-sided ops, one UD QP for messaging.
//
// Life cycle (per node):
//   1. make the fabric (config), 2. register_region(),
//      register_growable_region() or register_file_region() for every
//      region, 3. connect(control) —
//      exchanges descriptors with every other node over the control plane
//      and maps/connects to them; 4. each worker thread uses its own
//      endpoint(t). No region can be registered after connect.
//
// The RDMA contract every backend keeps, and every upper layer may rely on:
//   * Ops posted on one channel — (this worker thread, peer node) — are
//     executed and complete in FIFO order. A signaled completion therefore
//     implies the completion of every earlier op on the same channel
//     (passive ACK for unsignaled ops).
//   * A READ is NOT atomic beyond 8 aligned bytes: it may observe a
//     concurrent writer half-way. Upper layers must detect torn reads.
//   * CAS and FAA act on 8-byte, 8-byte-aligned words and are atomic with
//     respect to other fabric atomics on the same word from any node. On shm
//     they are also atomic with respect to CPU atomics; on verbs they are not
//     (ask atomics_coherent_with_cpu()).
//   * A remote address is (node, region, offset). An op whose range is not
//     inside the region (or names a missing node/region, or is a misaligned
//     atomic) touches nothing and completes with an error status — even if it
//     was posted unsignaled, as with an RNIC.
//   * A request that fails those checks never reaches the wire; its error
//     completion is delivered at the next poll() and may overtake the
//     completions of requests posted earlier on the same channel.
//   * Messages: FIFO per (sender thread, receiver thread). On shm delivery is
//     reliable; on verbs (UD) a message may in rare cases be lost, so callers
//     that wait for an answer need a timeout (the RPC layer has one).
//     Receivers must keep calling poll_messages(): that is what returns
//     ring space / credits to senders.
//   * Local buffers (READ destination, WRITE source, atomic result) must lie
//     inside a region registered on the local node; otherwise the op
//     completes with kBadLocalBuffer. This holds on shm too, so code that
//     passes its tests on shm also works on an RNIC.
//
// Persistent regions (register_file_region): memory the caller mapped from
// a file (a PmemPool's data area, src/rdpma). What is durable when, on both
// backends (thesis §3.1, hint H9):
//   * A one-sided WRITE's completion does NOT mean the bytes are durable
//     (on hardware they may sit in the target RNIC's buffers or, with DDIO,
//     in the target's last-level cache).
//   * A READ posted after WRITEs on the same channel (this thread, that
//     peer) flushes them: when the READ completes successfully, every
//     earlier WRITE of the channel into a persistent region of that peer is
//     durable. The READ may target any region of the peer and may be tiny.
//   * CAS/FAA and messages flush nothing, and the effect of a CAS/FAA on
//     a persistent region is not made durable by this contract (keep
//     atomic words in volatile memory, hint H8).
//   * Stores the owner makes with its own CPU into its persistent region
//     are its own business (rdpma::PmemPool::persist / pwrite).
// The shm backend models this (see r2/shm/README.md): a WRITE into a
// persistent region is followed by cache-line flushes issued by the
// issuing thread (or, for a file on a disk file system, remembers the
// dirty range), and the channel's next READ fences them (or msyncs the
// remembered ranges) before it completes.
//
// Growable regions (register_growable_region, FileRegion::growable; issue
// 46, "tables that grow"): a region whose VIRTUAL size is fixed at
// registration — address space, deterministic on every node, so a remote
// address (node, region, offset) means the same thing for the region's
// whole life — of which the owner backs ranges on demand with commit(),
// before it publishes any address inside them:
//   * after commit(id, offset, bytes) returned ok, the owner's stores and
//     every peer's one-sided ops in that range reach memory that exists
//     and is resident on the owner (populated by commit, not faulted at
//     run time; a peer's mapping of a shm segment still takes one minor
//     fault per page it first touches, as for any region); a full host is
//     commit()'s kResourceExhausted, never a SIGBUS or an OOM kill later;
//   * ops on a range nobody committed are NOT checked by the fabric (the
//     bounds check is the virtual size, as for any region): they are the
//     caller's bug — on shm they silently allocate the page (or SIGBUS
//     when /dev/shm is full), on verbs they fault the page in through ODP;
//   * backed memory is never given back while the fabric lives.
// What is reserved where, per backend: r2/README.md, "Growable regions".
//
// Threading: Fabric::register_region/register_growable_region/
// register_file_region/connect are called by one set-up thread;
// commit()/committed_bytes() by any thread once the region is registered
// (but not while the set-up thread is still registering regions). An
// Endpoint is used by exactly one worker thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/control/membership.h"

namespace drtmx::r2 {

class ControlClient;

using NodeId = uint16_t;
using ThreadId = uint16_t;
using RegionId = uint16_t;

struct RemoteAddr {
  NodeId node = 0;
  RegionId region = 0;
  uint64_t offset = 0;
};

enum class Verb : uint8_t { kRead, kWrite, kCas, kFaa };
const char* verb_name(Verb v);

// Status of one completed op. Small and cheap: it sits on the hot path.
enum class OpStatus : uint8_t {
  kOk = 0,
  kOutOfBounds,     // [offset, offset + len) is not inside the region
  kBadRegion,       // the target node has no such region
  kBadNode,         // no such node in the cluster
  kMisaligned,      // atomic on an address that is not 8-byte aligned
  kBadLocalBuffer,  // local buffer not inside a locally registered region
  kBadLength,       // zero-length op, or longer than max_op_bytes()
  kTransportError,  // the connection or device failed
  kFenced,          // membership: the target removed this node, this node
                    // was removed, or the target is not a member (no effect)
};
const char* op_status_name(OpStatus s);

struct WorkRequest {
  Verb verb = Verb::kRead;
  bool signaled = true;   // false: no completion unless it fails (passive ACK)
  uint32_t len = 0;       // bytes for READ/WRITE; atomics always move 8 bytes
  void* local = nullptr;  // READ dst, WRITE src, CAS/FAA old-value dst
  RemoteAddr remote;      // remote.node must equal the channel's peer
  uint64_t compare = 0;   // CAS: expected value
  uint64_t operand = 0;   // CAS: new value; FAA: value to add
  uint64_t wr_id = 0;     // returned in the completion, never interpreted
};

struct Completion {
  uint64_t wr_id = 0;
  OpStatus status = OpStatus::kOk;
  Verb verb = Verb::kRead;
  NodeId peer = 0;
};

enum class PostResult : uint8_t {
  kOk,         // queued; sent at the next doorbell()
  kQueueFull,  // the channel's send queue is full: poll() and retry
};

enum class SendResult : uint8_t {
  kOk,        // queued; visible to the receiver after flush_sends()
  kNoSpace,   // receiver's ring or credits exhausted: poll_messages(), then retry
  kTooLarge,  // len > mtu(): split it above (the RPC layer does)
  kBadPeer,   // no such node or thread
  kFenced,    // membership: the destination is not a member, or this node
              // was removed; the message was dropped (as a lost message)
};

// A received message. `data` stays valid until the next poll_messages() call
// on the same endpoint, which releases the space back to the sender.
struct Message {
  NodeId src_node = 0;
  ThreadId src_thread = 0;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
};

// How the bytes of a region become durable.
enum class Persistence : uint8_t {
  kNone = 0,   // volatile memory (register_region)
  kPmem = 1,   // persistent memory (DAX): cache-line flushes + fence
  kMemFs = 2,  // a file on a memory file system (tmpfs, ramfs, /dev/shm):
               // cache-line flushes + fence as on pmem; survives a process
               // crash, not a power loss
  kMsync = 3,  // a file on a disk file system: msync of the dirty pages
};
const char* persistence_name(Persistence p);  // "volatile", "pmem", "memfs", "msync"
// The Persistence with wire code `code` (its enum value); false for an
// unknown code (descriptors from peers are checked with it).
bool persistence_from_code(uint8_t code, Persistence* out);

struct Region {
  RegionId id = 0;
  uint8_t* base = nullptr;
  size_t size = 0;
  Persistence persistence = Persistence::kNone;
  bool persistent() const { return persistence != Persistence::kNone; }
};

// Memory the caller mapped from a file, to be registered as a persistent
// region: bytes [file_offset, file_offset + bytes) of `path`, mapped
// MAP_SHARED at `base` (e.g. PmemPool::data_region()).
//   * The caller keeps the mapping (and the file) alive and unchanged in
//     size for the fabric's lifetime; the fabric never unmaps, truncates or
//     removes the file: it is the database.
//   * file_offset is a multiple of the page size (4096); base is page
//     aligned; the file holds at least file_offset + bytes bytes.
//   * shm: every peer opens `path` and maps the same range (so the nodes
//     must share a host and see the same file at that path; checked by
//     device and inode at connect). verbs: the memory is registered with
//     the RNIC; `path` is only reported.
//   * mode is kPmem, kMemFs or kMsync (kNone is refused).
//   * growable: the file is sparse at its full size (a PmemPool created
//     with PoolSpec::sparse) and the region is growable (see above): the
//     fabric allocates the file's blocks of a range at commit() (fallocate)
//     and populates its pages (not in kMsync mode, as PmemPool's
//     map_in_advance); bytes must then be a multiple of the page size.
//     verbs: registered with on-demand paging, as register_growable_region.
struct FileRegion {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  std::string path;
  uint64_t file_offset = 0;
  Persistence mode = Persistence::kMsync;
  bool growable = false;
};

// One worker thread's access to the fabric.
class Endpoint {
 public:
  virtual ~Endpoint() = default;

  virtual ThreadId thread() const = 0;

  // --- one-sided -----------------------------------------------------------
  // Queues `wr` on the channel to wr.remote.node. Nothing moves until
  // doorbell(peer). Errors in the request itself are reported as an error
  // completion, never here.
  virtual PostResult post(const WorkRequest& wr) = 0;
  // Sends every request queued on the channel to `peer` as one batch.
  virtual void doorbell(NodeId peer) = 0;
  // Returns up to `max` completions (FIFO per channel). Non-blocking.
  virtual int poll(Completion* out, int max) = 0;
  // Requests posted or in flight but not yet completed on the channel.
  virtual uint32_t outstanding(NodeId peer) const = 0;
  virtual uint32_t send_queue_depth() const = 0;

  // --- local buffers of unsignaled requests (passive ACK) --------------------
  // The fabric may use a request's local buffer (a WRITE's source, a READ's
  // or an atomic's destination) until the request RETIRES; a signaled
  // request retires by its completion, an unsignaled one when the channel
  // knows it is done — on an RNIC only when a later signaled request of
  // the channel completes. Requests retire in post order per channel.
  //   posted(peer):  how many requests the channel accepted so far (the
  //                  n-th accepted request is number n; one refused with an
  //                  error completion is not numbered);
  //   retired(peer): every request numbered up to this has retired.
  // Both only grow. retire_posted(peer) makes the channel's requests retire
  // without waiting for later traffic (verbs: a signaled zero-length WRITE
  // of its own, whose completion it consumes); it never blocks, and
  // retired() moves as poll() is called.
  virtual uint64_t posted(NodeId peer) const = 0;
  virtual uint64_t retired(NodeId peer) const = 0;
  virtual void retire_posted(NodeId peer) = 0;

  // --- messaging -------------------------------------------------------------
  // Largest message payload of this endpoint. May be below the configured
  // mtu (verbs: one UD packet of the port's MTU); split by this value.
  virtual uint32_t mtu() const = 0;
  // Queues one message to thread `thread` of node `node`.
  virtual SendResult send(NodeId node, ThreadId thread, const void* msg, uint32_t len) = 0;
  // Makes every queued message visible to its receiver (one doorbell).
  virtual void flush_sends() = 0;
  // Returns up to `max` received messages, releasing those of the last call.
  virtual int poll_messages(Message* out, int max) = 0;

  // True when the node's registered memory contains [p, p + len).
  virtual bool is_registered(const void* p, size_t len) const = 0;

  // --- this node's own memory -------------------------------------------------
  // Executes `wr`, whose target is this node, with the calling thread's
  // CPU and returns true with its status in *st: nothing queued, no
  // completion. The checks, fencing, FIFO order behind ops already queued
  // to this node and the persistence contract are those of post +
  // doorbell. A READ's data may arrive later: in wr.local by the next
  // finish_local() or poll() (so a batch of READs can overlap its misses).
  // Returns false (nothing done) when the op must be posted like any other:
  // the default, and verbs, where an RNIC's atomics need not be atomic with
  // the CPU's.
  virtual bool execute_local(const WorkRequest& wr, OpStatus* st) {
    (void)wr;
    (void)st;
    return false;
  }
  // Completes the READs execute_local() left to finish.
  virtual void finish_local() {}
  // True when execute_local() runs ops (it may still refuse one that must
  // queue behind others); false when it never does.
  virtual bool executes_local() const { return false; }

  // --- waiting while idle ------------------------------------------------------
  // An idle worker (nothing to poll, no coroutine waiting) waits up to `ns`
  // nanoseconds for this endpoint to have something to poll; returns false
  // when something already was there (nothing waited). The default sleeps
  // `ns` (shm and verbs: peers' one-sided ops need nothing from this
  // thread); ucx blocks on its worker's event descriptor, since on tcp the
  // target's worker executes the peers' ops (see r2/ucx/README.md).
  virtual bool wait_idle(long ns) {
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
    return true;
  }
};

struct FabricInfo {
  std::string backend;  // "shm", "verbs" or "ucx"
  NodeId node = 0;
  uint16_t num_nodes = 0;
  uint16_t threads = 0;
  bool atomics_coherent_with_cpu = false;
  // One-sided WRITEs into a volatile region are the issuing CPU's plain
  // stores, made in op order (shm): local readers of that memory may rely on
  // the CPU's memory order (store/record_io.h, quiet copies). False where a
  // NIC's DMA writes it (verbs).
  bool writes_are_cpu_stores = false;
  // ucx, after connect(): per node (this one included), the transports UCX
  // chose toward it, e.g. "tcp/lo[am,rma_bw]" or
  // "posix/memory[am] + cma/memory[rma_bw]" (empty for shm and verbs).
  std::vector<std::string> peer_transports;
};

// For reports: the transports UCX chose toward the other nodes, one line
// ("tcp/lo.0[am,am_bw] to every peer", or "node 1: ...; node 2: ..." when
// they differ); "" when the fabric is not ucx (or not connected).
std::string describe_transports(const FabricInfo& info);

class Fabric {
 public:
  virtual ~Fabric() = default;

  virtual const FabricInfo& info() const = 0;
  // Registers a zeroed region of `bytes` bytes with id `id` (ids are
  // chosen by the caller and must agree across nodes for symmetric tables).
  virtual Result<Region> register_region(RegionId id, size_t bytes) = 0;
  // Registers the caller's file mapping `f` as region `id` (see FileRegion;
  // the returned Region has persistence f.mode). Refused, naming what is
  // wrong, for a bad FileRegion, a duplicate id, or after connect().
  virtual Result<Region> register_file_region(RegionId id, const FileRegion& f) = 0;
  // A region of `bytes` VIRTUAL bytes of which nothing is backed yet:
  // address space is reserved here (and, on shm, in every peer's mapping at
  // connect), pages exist only in ranges commit() backed. Same id rules as
  // register_region; before connect(). The returned Region's size is the
  // virtual size (peers' bounds checks use it too).
  //   shm, nodes > 1: a /dev/shm segment ftruncate'd (sparse) to the size,
  //     mapped MAP_SHARED|MAP_NORESERVE here and by every peer at connect.
  //   shm, one node: private anonymous memory, MAP_NORESERVE.
  //   verbs: private anonymous memory, MAP_NORESERVE, registered with
  //     on-demand paging (IBV_ACCESS_ON_DEMAND); kNotSupported, saying so,
  //     when the device has no ODP for RC one-sided ops.
  // Address space is the limit: a process maps every node's growable
  // regions, and x86-64 with 4-level page tables gives a process 128 TiB
  // (measured: 127 TiB of segments map); r2/README.md has the numbers.
  virtual Result<Region> register_growable_region(RegionId id, size_t bytes) = 0;
  // Backs [offset, offset + bytes) of this node's region `id` (rounded out
  // to 4 KiB pages): afterwards the owner's stores and every peer's
  // one-sided ops there reach memory that exists and is resident
  // (populated now, not faulted later). Idempotent (a range backed before
  // costs one lock and a lookup); thread-safe (any owner thread,
  // concurrently with the endpoints and with other commits); allowed
  // before and after connect(). On a region registered whole
  // (register_region, a non-growable file region) it is a no-op returning
  // ok. Errors: kInvalidArgument for an unknown id or a range outside the
  // region; kResourceExhausted when the host has no memory / space for it,
  // naming the region, the bytes asked, what the node holds of it, what is
  // free, and what to do; kIoError for another failure of the system call
  // (naming it). A failed commit may leave part of the range backed (not
  // counted; a retry backs the rest). Never a SIGBUS or an OOM kill later
  // for a range commit() accepted.
  virtual Status commit(RegionId id, uint64_t offset, uint64_t bytes) = 0;
  // Bytes of local region `id` backed so far (page-rounded ranges, each
  // counted once; the whole size for register_region and non-growable file
  // regions); 0 if absent.
  virtual uint64_t committed_bytes(RegionId id) const = 0;
  // Exchanges descriptors with all nodes and makes every peer reachable.
  virtual Status connect(ControlClient& control) = 0;
  virtual Endpoint* endpoint(ThreadId t) = 0;
  // Local region by id, or nullptr.
  virtual const Region* region(RegionId id) const = 0;
  // Size of a peer's region as learned at connect, or 0 when absent.
  virtual size_t remote_region_size(NodeId node, RegionId id) const = 0;
  // Persistence of a region of any node (this one included) as learned at
  // register/connect; kNone for a volatile or absent region.
  virtual Persistence region_persistence(NodeId node, RegionId id) const = 0;
  // Upper bound on the length of one READ/WRITE.
  virtual uint32_t max_op_bytes() const = 0;

  // Membership fencing (survive-failures mode; r2/README.md "Fencing").
  // This node learnt configuration `epoch` with members `live` (the node
  // runtime calls it from the control client's thread, concurrently with
  // the endpoints; after connect()). Ignored unless epoch is above the last
  // one applied. From then on, on this node:
  //   * ops to a non-member complete with kFenced, sends to one return
  //     kFenced, and messages from one are dropped unread;
  //   * if this node is not in `live` (it learnt it was removed), every op
  //     completes with kFenced and every send returns kFenced;
  // and on its peers:
  //   * shm: a removed node's ops on this node's memory complete with
  //     kFenced from the first op its issuing thread checks after the
  //     update (one load per op, by the issuer; see the README for the one
  //     op per thread that may be past the check);
  //   * verbs: this node's QPs to and from the removed nodes are moved to
  //     the error state, so the RNIC refuses their requests.
  virtual void apply_membership(uint64_t epoch, const NodeSet& live) = 0;
};

}  // namespace drtmx::r2
