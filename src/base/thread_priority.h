// Lease threads ahead of the engine's busy workers.
//
// A node's workers poll without sleeping, and a machine may run more such
// threads than it has cores (three node processes on two cores here, or a
// build beside a run). The control plane's lease threads (the coordinator's
// loop and each node's member thread, r2/control) sleep in poll() and need
// a few microseconds every lease/4; if the scheduler leaves them waiting
// behind busy threads for longer than the lease, a healthy cluster reads as
// failed: it happened here, every node "lost the coordinator" 213 s into a
// TPC-E run while three builds shared the machine. FaRM runs its lease
// manager at the highest user priority for the same reason.
//
// raise_lease_thread() gives the calling thread SCHED_FIFO priority 1 —
// ahead of every ordinary thread, behind every other real-time one — where
// the process may (root, or CAP_SYS_NICE); else nice -10; else it stays as
// it is. Only for threads that block between short bursts: a real-time
// thread that spun would take a core from everything else (the kernel's
// real-time throttling still leaves ordinary threads 5 %).
#pragma once

namespace drtmx {

enum class ThreadPriority { kRealtime, kRaised, kNormal };

// Raises the calling thread as above and says what it got.
ThreadPriority raise_lease_thread();
const char* thread_priority_name(ThreadPriority p);

}  // namespace drtmx
