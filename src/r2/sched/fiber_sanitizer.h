// Tells AddressSanitizer about coroutine stack switches, so that it checks
// each coroutine against its own stack (Boost.Context's fcontext switches
// are invisible to it). Every switch in Worker goes through these; in builds
// without ASan they compile to nothing.
//
// Protocol (compiler-rt's fiber interface): the side that switches away
// calls fiber_switch_begin() with the stack it switches to; the side that
// lands calls fiber_switch_end() first thing. A fiber that ends passes a
// null `fake` so ASan frees its fake stack.
#pragma once

#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_context.hpp>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define DRTMX_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DRTMX_FIBER_ASAN 1
#endif
#endif
#if defined(DRTMX_FIBER_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace drtmx::r2 {

struct FiberStack {
  const void* bottom = nullptr;
  size_t size = 0;
};

inline void fiber_switch_begin(void** fake, const FiberStack& to) {
#if defined(DRTMX_FIBER_ASAN)
  __sanitizer_start_switch_fiber(fake, to.bottom, to.size);
#else
  (void)fake;
  (void)to;
#endif
}

inline void fiber_switch_end(void* fake, FiberStack* from) {
#if defined(DRTMX_FIBER_ASAN)
  const void* bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake, &bottom, &size);
  if (from != nullptr) {
    from->bottom = bottom;
    from->size = size;
  }
#else
  (void)fake;
  (void)from;
#endif
}

// A guarded stack allocator that records where the stack it hands out lies.
class RecordingStack {
 public:
  RecordingStack(size_t bytes, FiberStack* out) : alloc_(bytes), out_(out) {}
  boost::context::stack_context allocate() {
    boost::context::stack_context sc = alloc_.allocate();
    out_->bottom = static_cast<char*>(sc.sp) - sc.size;
    out_->size = sc.size;
    return sc;
  }
  void deallocate(boost::context::stack_context& sc) noexcept {
#if defined(DRTMX_FIBER_ASAN)
    // Frames left on a switched-away stack keep their redzones in the
    // shadow; clear them, or memory mapped later at this address (a shm
    // segment, say) would look like a poisoned stack.
    __asan_unpoison_memory_region(static_cast<char*>(sc.sp) - sc.size, sc.size);
#endif
    alloc_.deallocate(sc);
  }

 private:
  boost::context::protected_fixedsize_stack alloc_;
  FiberStack* out_;
};

}  // namespace drtmx::r2
