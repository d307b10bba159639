#include "store/grow_ahead.h"

namespace drtmx::store {

GrowAhead::GrowAhead() : thread_([this] { loop(); }) {}

GrowAhead::~GrowAhead() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
    queue_.clear();
  }
  work_.notify_all();
  idle_.notify_all();
  thread_.join();
}

void GrowAhead::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return;
    queue_.push_back(std::move(task));
  }
  work_.notify_one();
}

void GrowAhead::drain() {
  std::unique_lock<std::mutex> g(mu_);
  // Every task queued now runs before the queue is empty and the thread
  // idle (a task posted meanwhile only makes the wait longer: bounded by
  // the posters, which are the caller's own threads).
  idle_.wait(g, [this] { return stop_ || (queue_.empty() && !running_); });
}

uint64_t GrowAhead::done() const {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}

void GrowAhead::loop() {
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    work_.wait(g, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    g.unlock();
    task();
    g.lock();
    running_ = false;
    ++done_;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace drtmx::store
