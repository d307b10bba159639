// Framing of control-plane messages on a TCP socket, and the socket helpers
// both ends use. Every wait is bounded by a deadline; nothing here throws or
// raises SIGPIPE.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "control.pb.h"

namespace drtmx::r2::control {

using Clock = std::chrono::steady_clock;

// Frames above this are refused as malformed (a peer speaking another
// protocol, or garbage).
constexpr uint32_t kMaxFrameBytes = 64u << 20;
// Until the key handshake is done, frames are small (a join with its
// fingerprint); anything larger is refused before it is buffered.
constexpr uint32_t kMaxHandshakeFrameBytes = 64u << 10;

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// Parses "host:port" (port may be 0 where allowed). `what` names the option.
Result<HostPort> parse_host_port(const std::string& s, const std::string& what);

// Writes one frame, waiting for the socket as needed until `deadline`.
Status send_frame(int fd, const Envelope& e, Clock::time_point deadline);

// Accumulates bytes from a socket and cuts them into frames.
class FrameReader {
 public:
  // Reads what the (non-blocking) socket has. Returns false on EOF or a
  // socket error (then *err says which).
  bool fill(int fd, Status* err);
  // Next complete frame, if any. A malformed frame sets *err.
  bool next(Envelope* out, Status* err);
  // Bytes read so far (a peer that sent anything is alive).
  uint64_t received() const { return received_; }
  // Frames above `bytes` are malformed (kMaxFrameBytes by default).
  void set_limit(uint32_t bytes) { limit_ = bytes; }

 private:
  uint32_t limit_ = kMaxFrameBytes;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t received_ = 0;
};

// Waits until the next frame arrives (or EOF, an error, or the deadline).
Status recv_frame(int fd, FrameReader& reader, Envelope* out, Clock::time_point deadline);

// Makes a socket non-blocking, no-delay and close-on-exec.
void tune_socket(int fd);

}  // namespace drtmx::r2::control
