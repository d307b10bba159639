// Tests of the ucx fabric with nodes as threads of one process: on TCP (and
// for emulated atomics on any transport) a one-sided op is executed by the
// TARGET's UCP worker, which only runs when its endpoint is polled. A Pump
// polls the endpoints a test does not drive itself, each from a thread of
// its own (a worker is single-threaded), until it is destroyed; the
// messages they receive are dropped.
#pragma once

#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "r2/fabric.h"

namespace drtmx::r2::testing {

class Pump {
 public:
  explicit Pump(std::vector<Endpoint*> eps) {
    for (Endpoint* ep : eps) {
      threads_.emplace_back([this, ep] {
        Completion c[16];
        Message m[16];
        while (!stop_.load(std::memory_order_relaxed)) {
          ep->poll(c, 16);
          ep->poll_messages(m, 16);
        }
      });
    }
  }
  ~Pump() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  Pump(const Pump&) = delete;
  Pump& operator=(const Pump&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The UCX transports a test runs on: "" (UCX's choice: shared memory and cma
// within a host) or "tcp" (UCX_TLS=tcp, the network path). UCX reads the
// environment when a fabric's context is created.
inline void use_ucx_transports(const std::string& tls) {
  if (tls.empty()) {
    unsetenv("UCX_TLS");
  } else {
    setenv("UCX_TLS", tls.c_str(), 1);
  }
}

}  // namespace drtmx::r2::testing
