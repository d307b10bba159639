// The cluster key: the secret that lets a node into its cluster's control
// plane (r2/control/README.md, "The cluster key").
//
// A key is at least kMinClusterKeyBytes bytes (its file's content, trailing
// whitespace dropped). Launchers make a random one per run (a key file holds
// it as hex: 32 random bytes, 64 characters) and hand it to the nodes they
// start without a command line showing it (a pipe on the node's standard
// input, --cluster-key-file=-); a node started by hand reads a file that
// only its owner can access.
//
// The join proves the key both ways with HMAC-SHA256 (OpenSSL libcrypto)
// over both sides' fresh nonces and the join's bytes (handshake_mac); nonces
// and keys come from RAND_bytes.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace drtmx::r2 {

constexpr size_t kMinClusterKeyBytes = 32;
// Anything longer is not a key file (a wrong path, say).
constexpr size_t kMaxClusterKeyBytes = 4096;

// A fresh random key: kMinClusterKeyBytes random bytes as hex.
Result<std::string> make_cluster_key();

// ok when `key` may serve as a cluster key; otherwise why not, naming
// `what` (the option or file it came from).
Status check_cluster_key(const std::string& key, const std::string& what);

// The key in `path` ("-": standard input, read to its end within 10 s).
// Refused, with what to do: a file others than its owner may read or write
// (mode & 077), a terminal, anything but a regular file, pipe or socket, a
// key shorter than kMinClusterKeyBytes or longer than kMaxClusterKeyBytes.
Result<std::string> read_cluster_key_file(const std::string& path);

// Writes `key` (and a newline) to a new file `path` with mode 0600; fails
// when `path` exists.
Status write_cluster_key_file(const std::string& path, const std::string& key);

namespace control {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;  // HMAC-SHA256

// kNonceBytes from the operating system's generator (RAND_bytes).
Result<std::string> random_nonce();

// Who proves the key: the two sides MAC under different labels, so that
// one side's proof is never the other's.
enum class Prover { kMember, kCoordinator };

// HMAC-SHA256(key, label(prover) || 0 || coordinator_nonce || node_nonce ||
// join). Both nonces are kNonceBytes long (callers check).
std::string handshake_mac(const std::string& key, Prover prover,
                          const std::string& coordinator_nonce, const std::string& node_nonce,
                          const std::string& join);

// Constant-time comparison of two MACs (false when the sizes differ).
bool mac_equal(const std::string& a, const std::string& b);

}  // namespace control
}  // namespace drtmx::r2
