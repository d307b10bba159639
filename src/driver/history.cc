// Histories: the parts the coroutines write and their merge (history.h).
#include "history.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <queue>
#include <set>
#include <vector>

#include "base/decimal.h"

namespace drtmx::bench {
namespace {

// A part grows by this much at a time: one ftruncate and one mmap per
// chunk, its pages faulted in by that mmap (MAP_POPULATE: one system call
// instead of a page fault every 4 KiB of lines on the coroutine's path).
constexpr size_t kChunk = size_t{4} << 20;

uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

Status sys_error(const std::string& what, int err) {
  return io_error(what + ": " + std::strerror(err), err);
}

// A part file mapped for reading: its lines up to the first zero byte.
struct PartReader {
  std::string path;
  const char* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  // The current line [pos, end) and its fields.
  size_t end = 0;
  uint64_t time = 0;
  bool invoke = false;
  bool last_was_invoke = false;

  ~PartReader() {
    if (data != nullptr) ::munmap(const_cast<char*>(data), size);
  }
  Status open() {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sys_error("history part " + path, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      ::close(fd);
      return sys_error("history part " + path, e);
    }
    size = static_cast<size_t>(st.st_size);
    if (size > 0) {
      void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        return sys_error("history part " + path, e);
      }
      data = static_cast<const char*>(m);
    }
    ::close(fd);
    return Status();
  }
  // Moves to the next line; false at the end (or the zero bytes a killed
  // process left). A line that is not this writer's shape is an error.
  Result<bool> next() {
    pos = end;
    while (pos < size && data[pos] == '\n') ++pos;
    if (pos >= size || data[pos] == '\0') return false;
    const char* nl = static_cast<const char*>(std::memchr(data + pos, '\n', size - pos));
    end = nl ? static_cast<size_t>(nl - data) + 1 : size;
    std::string_view l(data + pos, (nl ? end - 1 : end) - pos);
    const size_t t = l.find("\"time\":");
    const size_t ty = l.find("\"type\":\"");
    if (l.empty() || l.front() != '{' || t == std::string_view::npos ||
        ty == std::string_view::npos || (nl == nullptr && l.back() != '}')) {
      if (nl == nullptr) return false;  // a last line cut by a crash
      return invalid_argument("history part " + path + ": a line at byte " + std::to_string(pos) +
                              " is not a history entry");
    }
    const char* b = l.data() + t + 7;
    auto r = std::from_chars(b, l.data() + l.size(), time);
    if (r.ec != std::errc()) {
      return invalid_argument("history part " + path + ": no time at byte " + std::to_string(pos));
    }
    invoke = l.compare(ty + 8, 6, "invoke") == 0;
    last_was_invoke = invoke;
    if (nl == nullptr) end = size;
    return true;
  }
  std::string_view line() const {
    size_t e = end;
    while (e > pos && (data[e - 1] == '\n')) --e;
    return {data + pos, e - pos};
  }
};

}  // namespace

std::string history_parts_dir(const std::string& file) {
  return file + ".parts";
}

Result<std::unique_ptr<HistoryPart>> HistoryPart::create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("--history: cannot create " + path, errno);
  std::unique_ptr<HistoryPart> p(new HistoryPart(fd, path));
  DRTMX_RETURN_IF_ERROR(p->map_next());
  return p;
}

HistoryPart::~HistoryPart() {
  (void)close();
}

Status HistoryPart::map_next() {
  if (map_ != nullptr) {
    ::munmap(map_, kChunk);
    map_ = nullptr;
    ++chunk_;
  }
  const off_t end = static_cast<off_t>((chunk_ + 1) * kChunk);
  if (::ftruncate(fd_, end) != 0) return sys_error("--history: growing " + path_, errno);
  void* m = ::mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_,
                   static_cast<off_t>(chunk_ * kChunk));
  if (m == MAP_FAILED) return sys_error("--history: mapping " + path_, errno);
  map_ = static_cast<char*>(m);
  used_ = 0;
  return Status();
}

Status HistoryPart::append(std::string_view line) {
  if (!error_.is_ok()) return error_;
  if (fd_ < 0) return internal_error("--history: " + path_ + " is closed");
  if (line.size() + 1 > kChunk) {
    return error_ = invalid_argument("--history: an entry of " + std::to_string(line.size()) +
                                     " bytes is longer than a part's chunk");
  }
  if (used_ + line.size() + 1 > kChunk) {
    // The rest of the chunk becomes empty lines (the merge skips them).
    std::memset(map_ + used_, '\n', kChunk - used_);
    written_ += kChunk - used_;
    if (Status s = map_next(); !s.is_ok()) return error_ = s;
  }
  std::memcpy(map_ + used_, line.data(), line.size());
  map_[used_ + line.size()] = '\n';
  used_ += line.size() + 1;
  written_ += line.size() + 1;
  return Status();
}

Status HistoryPart::close() {
  if (fd_ < 0) return error_;
  if (map_ != nullptr) ::munmap(map_, kChunk);
  map_ = nullptr;
  Status s = error_;
  if (::ftruncate(fd_, static_cast<off_t>(written_)) != 0 && s.is_ok()) {
    s = sys_error("--history: cutting " + path_, errno);
  }
  ::close(fd_);
  fd_ = -1;
  return s;
}

HistoryRecorder::HistoryRecorder(std::unique_ptr<HistoryPart> part, uint64_t process,
                                 txn::CommitObserver* inner)
    : part_(std::move(part)), inner_(inner) {
  prefix_ = "{\"process\":";
  append_decimal(prefix_, process);
  prefix_ += ",\"time\":";
}

Status HistoryRecorder::line(const char* type, std::string_view value) {
  buf_.assign(prefix_);
  append_decimal(buf_, realtime_ns());
  buf_ += ",\"type\":\"";
  buf_ += type;
  buf_ += '"';
  if (!value.empty()) {
    buf_ += ",\"value\":";
    buf_ += value;
  }
  buf_ += '}';
  return part_->append(buf_);
}

Status HistoryRecorder::invoke(std::string_view value) {
  prepared_ = false;
  return line("invoke", value);
}

Status HistoryRecorder::complete(txn::Abort result, std::string_view value) {
  const char* type = result == txn::Abort::kNone ? "ok" : prepared_ ? "info" : "fail";
  return line(type, value);
}

void HistoryRecorder::prepared(std::span<const Write> writes) {
  prepared_ = true;
  if (inner_ != nullptr) inner_->prepared(writes);
}

void HistoryRecorder::logged(bool committed) {
  if (inner_ != nullptr) inner_->logged(committed);
}

Result<HistoryMerge> merge_history(const std::string& file, bool continue_file, uint16_t nodes) {
  namespace fs = std::filesystem;
  const std::string dir = history_parts_dir(file);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return not_found("--history: no parts in " + dir + " (no node wrote its history)");
  }
  std::vector<std::unique_ptr<PartReader>> parts;
  std::set<unsigned> seen;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    unsigned node = 0;
    if (std::sscanf(name.c_str(), "n%u-p", &node) != 1) continue;
    seen.insert(node);
    auto r = std::make_unique<PartReader>();
    r->path = e.path().string();
    DRTMX_RETURN_IF_ERROR(r->open());
    parts.push_back(std::move(r));
  }
  if (ec) return sys_error("--history: listing " + dir, ec.value());
  for (unsigned n = 0; n < nodes; ++n) {
    if (!seen.count(n)) {
      return not_found("--history: node " + std::to_string(n) + " left no part in " + dir +
                       " (a node on another host writes its parts there: give --history a "
                       "directory every host shares)");
    }
  }
  HistoryMerge m;
  m.parts = parts.size();
  if (continue_file && fs::exists(file, ec)) {
    PartReader old;
    old.path = file;
    DRTMX_RETURN_IF_ERROR(old.open());
    for (size_t i = 0; i < old.size; ++i) m.first_index += old.data[i] == '\n';
    if (old.size > 0 && old.data[old.size - 1] != '\n') ++m.first_index;
  } else {
    continue_file = false;
  }
  const int fd = ::open(
      file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (continue_file ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) return sys_error("--history: cannot write " + file, errno);
  std::string out;
  out.reserve(size_t{1} << 20);
  auto flush = [&]() -> Status {
    size_t off = 0;
    while (off < out.size()) {
      const ssize_t w = ::write(fd, out.data() + off, out.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return sys_error("--history: writing " + file, errno);
      }
      off += static_cast<size_t>(w);
    }
    out.clear();
    return Status();
  };
  // Smallest (time, invoke before completion, part) first.
  using Head = std::tuple<uint64_t, int, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  Status st;
  for (size_t i = 0; i < parts.size() && st.is_ok(); ++i) {
    auto r = parts[i]->next();
    if (!r.is_ok())
      st = r.status();
    else if (*r)
      heads.emplace(parts[i]->time, parts[i]->invoke ? 0 : 1, i);
  }
  uint64_t index = m.first_index;
  while (st.is_ok() && !heads.empty()) {
    const size_t i = std::get<2>(heads.top());
    heads.pop();
    PartReader& p = *parts[i];
    const std::string_view l = p.line();
    out += "{\"index\":";
    append_decimal(out, index++);
    out += ',';
    out.append(l.substr(1));
    out += '\n';
    ++m.operations;
    if (out.size() >= (size_t{1} << 20)) st = flush();
    auto r = p.next();
    if (!r.is_ok())
      st = r.status();
    else if (*r)
      heads.emplace(p.time, p.invoke ? 0 : 1, i);
  }
  if (st.is_ok()) st = flush();
  for (const auto& p : parts) m.dangling += p->last_was_invoke;
  if (::close(fd) != 0 && st.is_ok()) st = sys_error("--history: writing " + file, errno);
  if (!st.is_ok()) return st;
  parts.clear();
  fs::remove_all(dir, ec);
  return m;
}

}  // namespace drtmx::bench
