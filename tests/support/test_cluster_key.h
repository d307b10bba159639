// The cluster key of tests whose coordinator and nodes they start
// themselves (r2/control/cluster_key.h): in-process clusters share
// kTestClusterKey; node processes a test starts read it from a file only
// the test's user may read (write_test_key_file).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "r2/control/cluster_key.h"

namespace drtmx::testing {

inline const std::string kTestClusterKey = "drtmx-tests-cluster-key-0123456789abcdef";

// A 0600 file holding kTestClusterKey, made once per test process; its path.
inline const std::string& test_key_file() {
  static const std::string path = [] {
    const std::string p = "/tmp/drtmx-test-key-" + std::to_string(getpid());
    ::unlink(p.c_str());
    (void)r2::write_cluster_key_file(p, kTestClusterKey);
    std::atexit([] { ::unlink(("/tmp/drtmx-test-key-" + std::to_string(getpid())).c_str()); });
    return p;
  }();
  return path;
}

}  // namespace drtmx::testing
