#include "r2/control/cluster_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace drtmx::r2 {
namespace {

constexpr std::chrono::seconds kStdinWait{10};

std::string mode_text(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Reads `fd` to its end (at most kMaxClusterKeyBytes + 1 bytes), waiting
// for data at most until `deadline` when `bounded`.
Result<std::string> read_all(int fd, const std::string& what, bool bounded) {
  const auto deadline = std::chrono::steady_clock::now() + kStdinWait;
  std::string out;
  char buf[1024];
  while (out.size() <= kMaxClusterKeyBytes) {
    if (bounded) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
        return timeout_error(what + ": the key did not arrive (no end of input within " +
                             std::to_string(kStdinWait.count()) +
                             " s; '-' reads the key from standard input up to its end)");
      }
    }
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return io_error(what + ": cannot read the key", errno);
    }
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

}  // namespace

Result<std::string> make_cluster_key() {
  unsigned char raw[kMinClusterKeyBytes];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    return internal_error("cannot make a cluster key: the random generator failed (RAND_bytes)");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string key;
  for (unsigned char c : raw) {
    key += kHex[c >> 4];
    key += kHex[c & 15];
  }
  OPENSSL_cleanse(raw, sizeof raw);
  return key;
}

Status check_cluster_key(const std::string& key, const std::string& what) {
  if (key.size() < kMinClusterKeyBytes) {
    return invalid_argument(what + ": the cluster key is " + std::to_string(key.size()) +
                            " bytes, fewer than " + std::to_string(kMinClusterKeyBytes) +
                            " (make one with: openssl rand -hex 32 > FILE; chmod 600 FILE)");
  }
  if (key.size() > kMaxClusterKeyBytes) {
    return invalid_argument(what + ": more than " + std::to_string(kMaxClusterKeyBytes) +
                            " bytes: not a cluster key file (one line, e.g. from openssl rand "
                            "-hex 32)");
  }
  return Status::ok();
}

Result<std::string> read_cluster_key_file(const std::string& path) {
  const std::string what = "--cluster-key-file=" + path;
  const bool stdin_key = path == "-";
  int fd = stdin_key ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return io_error(what + ": cannot open the key file", errno);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    if (!stdin_key) close(fd);
    return io_error(what + ": cannot stat the key file", e);
  }
  Status bad;
  if (S_ISREG(st.st_mode)) {
    if ((st.st_mode & 077) != 0) {
      bad = invalid_argument(what + ": the key file has mode " + mode_text(st.st_mode) +
                             ": users other than its owner may read or change it; make it "
                             "private (chmod 600 " +
                             path + ")");
    }
  } else if (S_ISCHR(st.st_mode) && isatty(fd)) {
    bad = invalid_argument(what +
                           ": standard input is a terminal; pipe the key in (or give a "
                           "key file)");
  } else if (!S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
    bad = invalid_argument(what + ": not a regular file or a pipe");
  }
  Result<std::string> text = bad.is_ok() ? read_all(fd, what, !S_ISREG(st.st_mode)) : bad;
  if (!stdin_key) close(fd);
  if (!text) return text.status();
  std::string key = std::move(text.value());
  while (!key.empty() && std::strchr(" \t\r\n", key.back()) != nullptr) key.pop_back();
  if (Status s = check_cluster_key(key, what); !s.is_ok()) return s;
  return key;
}

Status write_cluster_key_file(const std::string& path, const std::string& key) {
  DRTMX_RETURN_IF_ERROR(check_cluster_key(key, path));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot create the key file " + path, errno);
  const std::string text = key + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int e = errno;
  close(fd);
  if (!ok) return io_error("cannot write the key file " + path, e);
  return Status::ok();
}

namespace control {

Result<std::string> random_nonce() {
  std::string n(kNonceBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1) {
    return internal_error("cannot make a handshake nonce: the random generator failed");
  }
  return n;
}

std::string handshake_mac(const std::string& key, Prover prover,
                          const std::string& coordinator_nonce, const std::string& node_nonce,
                          const std::string& join) {
  std::string msg = prover == Prover::kMember ? "drtmx-control-v1 member"
                                              : "drtmx-control-v1 "
                                                "coordinator";
  msg += '\0';
  msg += coordinator_nonce;
  msg += node_nonce;
  msg += join;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len) == nullptr) {
    return std::string();  // never equal to a real MAC (mac_equal needs kMacBytes)
  }
  return std::string(reinterpret_cast<const char*>(out), len);
}

bool mac_equal(const std::string& a, const std::string& b) {
  return a.size() == kMacBytes && b.size() == kMacBytes &&
         CRYPTO_memcmp(a.data(), b.data(), kMacBytes) == 0;
}

}  // namespace control
}  // namespace drtmx::r2
