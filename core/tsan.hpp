// ThreadSanitizer annotations for oneTBB, whose scheduler (libtbb) is not
// instrumented: TSan cannot see that a parallel_for body runs after the code
// that started the loop, or that the caller resumes after every body ended,
// and reports that ordering as races. The keys below tell it; nothing else is
// declared synchronised, so races between two bodies are still reported.
// All of it compiles to nothing without TSan.
#pragma once

#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#if defined(__SANITIZE_THREAD__)
#define IMGPIPE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IMGPIPE_TSAN 1
#endif
#endif

#if IMGPIPE_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace imgpipe::detail {

inline void handoff_acquire([[maybe_unused]] const void* key) noexcept {
#if IMGPIPE_TSAN
  if (key) __tsan_acquire(const_cast<void*>(key));
#endif
}

inline void handoff_release([[maybe_unused]] const void* key) noexcept {
#if IMGPIPE_TSAN
  if (key) __tsan_release(const_cast<void*>(key));
#endif
}

// Releases `key` when it goes out of scope, exceptions included.
struct ReleaseOnExit {
  const void* key;
  ~ReleaseOnExit() { handoff_release(key); }
};

// Acquires `key` when it goes out of scope, exceptions included.
struct AcquireOnExit {
  const void* key;
  ~AcquireOnExit() { handoff_acquire(key); }
};

// A function object handed to oneTBB, which copies it into its tasks or
// filters: every copy (made by the thread that starts the work, or by one
// that splits a range) releases `start` once made, and every call acquires
// it first, so what the caller wrote before, and the copy itself, are seen
// as written before the call; every call releases `end` (when given), which
// the caller acquires once the work is over. It holds a pointer to the real
// function object, which must outlive the work, so a copy reads only what
// this header wrote (tests/tsan.supp: race_top:core/tsan.hpp).
template <class F>
struct HandedOver {
  const F* f;
  const void* start;
  const void* end;
  HandedOver(const F* fn, const void* s, const void* e = nullptr) : f(fn), start(s), end(e) { handoff_release(start); }
  HandedOver(const HandedOver& o) : f(o.f), start(o.start), end(o.end) { handoff_release(start); }
  HandedOver& operator=(const HandedOver&) = delete;
  template <class... A>
  decltype(auto) operator()(A&&... a) const {
    handoff_acquire(start);
    const ReleaseOnExit done{end};
    return (*f)(std::forward<A>(a)...);
  }
};

// tbb::parallel_for(range, body) with the loop's start and end made visible
// to TSan. (Not named parallel_for: argument-dependent lookup would pick
// oneTBB's, which is more constrained, over it.)
template <class Range, class Body>
void annotated_parallel_for(const Range& range, const Body& body) {
  const char start = 0, end = 0;
  const AcquireOnExit after{&end};
  tbb::parallel_for(range, HandedOver<Body>(&body, &start, &end));
}

// body(i) for i in [first, last), in parallel.
template <class Body>
void annotated_parallel_for(int first, int last, const Body& body) {
  annotated_parallel_for(tbb::blocked_range<int>(first, last), [&](const tbb::blocked_range<int>& r) {
    for (int i = r.begin(); i < r.end(); ++i) body(i);
  });
}

}  // namespace imgpipe::detail
