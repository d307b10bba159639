// Histories (--history=FILE): every transaction attempt of a run as one
// operation in the format Jepsen's tools read (JSON Lines: index, process,
// time, type invoke/ok/fail/info, value), for drtmx-check.
//
// Writing. Each client coroutine (one Jepsen process) writes its own part,
// FILE.parts/n<node>-p<process>.jsonl, through a HistoryPart: lines are
// copied into a shared file mapping that grows in chunks, so the hot path
// is a memcpy (no system call, no lock), and what a coroutine wrote
// survives the death of its process (the kernel holds the pages): an
// operation whose invoke is in its part before the transaction can commit
// is never missing from the history, even when the node is SIGKILLed. A
// part of a killed process ends in zero bytes past its last line.
//
// Outcomes (per attempt; drtmx never calls `fail` what may have committed):
//   ok    the engine committed it (Abort::kNone);
//   fail  it aborted before its Log phase began (no write of it can be
//         visible anywhere);
//   info  it aborted after Validate (a node failure or a full log ring
//         during the Log phase: a backup may hold its log, and failover
//         may commit it), or its process died before it finished (an
//         invoke without completion).
//
// Merging. After the run drtmx-bench merges the parts into FILE in time
// order (CLOCK_REALTIME, so nodes on several hosts compare as well as
// their clocks agree), numbering `index`; at equal times an invoke goes
// first (no real-time order is claimed that the clock did not show). A
// --recover run continues an existing FILE: its processes have numbers of
// their own (the database's restart count picks them), its indices go on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "txn/engine.h"

namespace drtmx::bench {

// The parts directory of history file `file`.
std::string history_parts_dir(const std::string& file);

// One process's part, written by one coroutine.
class HistoryPart {
 public:
  static Result<std::unique_ptr<HistoryPart>> create(const std::string& path);
  ~HistoryPart();
  HistoryPart(const HistoryPart&) = delete;
  HistoryPart& operator=(const HistoryPart&) = delete;

  // Appends `line` and a newline. An error (the file system is full)
  // sticks: later calls return it too.
  Status append(std::string_view line);
  // Unmaps and cuts the file to what was written; the first error of the
  // part's life (append's, or this cut's).
  Status close();
  uint64_t bytes() const { return written_; }

 private:
  HistoryPart(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Status map_next();

  int fd_ = -1;
  std::string path_;
  char* map_ = nullptr;   // the current chunk
  uint64_t chunk_ = 0;    // index of the mapped chunk
  size_t used_ = 0;       // bytes used in the current chunk
  uint64_t written_ = 0;  // bytes of lines (and padding) in the file
  Status error_;
};

// Builds the lines of one process and tracks the attempt's outcome: the
// CommitObserver it installs (forwarding to `inner`, e.g. the journal's)
// sees whether an attempt reached its Log phase.
class HistoryRecorder final : public txn::CommitObserver {
 public:
  HistoryRecorder(std::unique_ptr<HistoryPart> part, uint64_t process, txn::CommitObserver* inner);

  // Before an attempt: its invoke, with `value` (JSON; empty: none).
  Status invoke(std::string_view value);
  // After it: `value` with the reads filled in when it committed.
  Status complete(txn::Abort result, std::string_view value);
  // The first error of invoke(), complete() or the close (HistoryPart::close).
  Status close() { return part_->close(); }

  void prepared(std::span<const Write> writes) override;
  void logged(bool committed) override;

 private:
  Status line(const char* type, std::string_view value);

  std::unique_ptr<HistoryPart> part_;
  txn::CommitObserver* inner_;
  bool prepared_ = false;
  std::string prefix_;  // {"process":P,"time":
  std::string buf_;
};

struct HistoryMerge {
  uint64_t operations = 0;  // lines written by this merge
  uint64_t parts = 0;
  uint64_t first_index = 0;  // > 0: FILE was continued
  uint64_t dangling = 0;     // invokes without completion (processes that died)
};

// Merges the parts in history_parts_dir(file) into `file` (replacing it,
// or continuing it when `continue_file` and it exists), then removes the
// parts. `nodes`: every node must have left at least one part (a node on
// another host writes its parts there: --history then needs a directory
// the hosts share).
Result<HistoryMerge> merge_history(const std::string& file, bool continue_file, uint16_t nodes);

}  // namespace drtmx::bench

namespace drtmx::bench {

struct BenchOptions;

// The launcher's side of --history around one run (`run`): an empty parts
// directory before; after it, whatever its outcome, the merge, then with
// --check-history drtmx-check (the drtmx-check beside this program) on the
// merged file — its result JSON to FILE.check.json — a report line each,
// and "history" in the run's --json. An invalid history (or one that
// cannot be merged or checked) fails a run that succeeded otherwise.
Status run_with_history(const BenchOptions& o, const std::function<Status()>& run);

// --history for one of several runs (presets, sweep points): FILE with
// `label` before its extension (h.jsonl -> h.farm.jsonl).
std::string history_file_for(const std::string& file, const std::string& label);

}  // namespace drtmx::bench
