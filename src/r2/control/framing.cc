#include "r2/control/framing.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace drtmx::r2::control {

Result<HostPort> parse_host_port(const std::string& s, const std::string& what) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    return invalid_argument(what + "='" + s + "': expected HOST:PORT, e.g. 127.0.0.1:7400");
  }
  HostPort hp;
  hp.host = s.substr(0, colon);
  const std::string port = s.substr(colon + 1);
  unsigned long v = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return invalid_argument(what + "='" + s + "': port is not a number");
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) return invalid_argument(what + "='" + s + "': port above 65535");
  }
  hp.port = static_cast<uint16_t>(v);
  return hp;
}

void tune_socket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
}

namespace {
int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1000 ? 1000 : static_cast<int>(left.count());
}
}  // namespace

Status send_frame(int fd, const Envelope& e, Clock::time_point deadline) {
  std::string body;
  if (!e.SerializeToString(&body)) return internal_error("cannot serialize a control message");
  if (body.size() > kMaxFrameBytes) {
    return out_of_range("control message of " + std::to_string(body.size()) +
                        " bytes exceeds the frame limit");
  }
  std::string frame(4, '\0');
  const uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  frame += body;
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t w = ::send(fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return unavailable(std::string("control connection lost while sending: ") +
                         std::strerror(errno));
    }
    if (Clock::now() >= deadline) return timeout_error("control connection: send timed out");
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, ms_until(deadline));
  }
  return Status::ok();
}

bool FrameReader::fill(int fd, Status* err) {
  char tmp[16384];
  for (;;) {
    // A peer that streams more than one frame's worth without a frame
    // boundary is cut off here, not buffered without end.
    if (buf_.size() - pos_ > static_cast<size_t>(limit_) + 4 + sizeof tmp) return true;
    ssize_t r = ::recv(fd, tmp, sizeof tmp, 0);
    if (r > 0) {
      buf_.append(tmp, static_cast<size_t>(r));
      received_ += static_cast<uint64_t>(r);
      if (static_cast<size_t>(r) < sizeof tmp) return true;
      continue;
    }
    if (r == 0) {
      *err = unavailable("connection closed by the peer");
      return false;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (errno == EINTR) continue;
    *err = unavailable(std::string("connection error: ") + std::strerror(errno));
    return false;
  }
}

bool FrameReader::next(Envelope* out, Status* err) {
  if (buf_.size() - pos_ < 4) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<uint8_t>(buf_[pos_ + i])) << (8 * i);
  if (n > limit_) {
    *err = invalid_argument("malformed control frame: length " + std::to_string(n) + " exceeds " +
                            std::to_string(limit_) +
                            (limit_ < kMaxFrameBytes ? " before the key handshake" : "") +
                            " (is something else talking to the coordinator port?)");
    return false;
  }
  if (buf_.size() - pos_ - 4 < n) return false;
  if (!out->ParseFromArray(buf_.data() + pos_ + 4, static_cast<int>(n)) ||
      out->body_case() == Envelope::BODY_NOT_SET) {
    *err = invalid_argument("malformed control frame: not a drtmx control message");
    return false;
  }
  pos_ += 4 + n;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return true;
}

Status recv_frame(int fd, FrameReader& reader, Envelope* out, Clock::time_point deadline) {
  for (;;) {
    Status err;
    if (reader.next(out, &err)) return Status::ok();
    if (!err.is_ok()) return err;
    if (Clock::now() >= deadline) return timeout_error("no message from the coordinator in time");
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, ms_until(deadline));
    if (r > 0 && !reader.fill(fd, &err)) {
      // Frames that arrived before the close still count.
      Status e2;
      if (reader.next(out, &e2)) return Status::ok();
      return err;
    }
  }
}

}  // namespace drtmx::r2::control
