// ThreadSanitizer annotations for parallel_pipeline (core/tsan.hpp has the
// primitives and the reason: libtbb is not instrumented, so every token passed
// from one filter to the next would look like a race). Each filter call
// acquires its token on entry and releases it on exit, the way
// parallel_pipeline orders them; serial filters also order
// their successive calls through their own key; the thread that starts and
// ends a run does the same with the run's keys. Nothing else is declared
// synchronised, so races between items in a parallel filter, or with threads
// outside the pipeline, are still reported. No code at all without TSan.
#pragma once

#include "core/tsan.hpp"

namespace imgpipe::detail {

// Wraps a filter body taking and returning a token: `serial_key` is the
// filter's own key for serial filters, nullptr for parallel ones; `end_key`
// is released by every call (also one that throws) and acquired only by the
// thread that ran the pipeline, once it is over.
template <class Token, class F>
auto handoff(F& body, const void* serial_key, const void* end_key) {
  return [&body, serial_key, end_key](Token t) {
    const ReleaseOnExit end{end_key};
    handoff_acquire(t);
    handoff_acquire(serial_key);
    const ReleaseOnExit serial{serial_key};
    Token r = body(t);
    handoff_release(r);
    return r;
  };
}

}  // namespace imgpipe::detail
