// The one shape every host memory resource and adaptor has (RMM style):
//
//   void* allocate(std::size_t bytes, std::size_t alignment);
//   void  deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept;
//
// HostResource is that shape as a concept: the adaptors are templates over an
// upstream that satisfies it, so a stack of adaptors costs no virtual calls.
// HostResourceRef is a non-owning, type-erased reference to any HostResource,
// for the places that pick resources at run time (the steps of a fallback
// chain, the upstream of the slot resource). No inheritance anywhere.
//
// Contract of every HostResource in imgpipe: deallocate() gets the pointer,
// size and alignment its allocate() was called with; allocate() of 0 bytes
// returns a valid pointer that must be deallocated like any other.
#pragma once

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace imgpipe::memory {

template <typename R>
concept HostResource = requires(R& r, void* p, std::size_t n, std::size_t a) {
  { r.allocate(n, a) } -> std::same_as<void*>;
  { r.deallocate(p, n, a) } noexcept;
};

// A reference to a resource the caller owns and keeps alive while the
// reference (and anything holding it) is used. Copyable, trivially cheap.
class HostResourceRef {
 public:
  template <HostResource R>
    requires(!std::same_as<std::remove_cv_t<R>, HostResourceRef>)
  HostResourceRef(R& r) noexcept  // NOLINT(google-explicit-constructor): a reference converts implicitly
      : obj_(&r),
        allocate_([](void* o, std::size_t n, std::size_t a) -> void* { return static_cast<R*>(o)->allocate(n, a); }),
        deallocate_([](void* o, void* p, std::size_t n, std::size_t a) noexcept {
          static_cast<R*>(o)->deallocate(p, n, a);
        }) {}

  // Forwards to the referenced resource; throws what it throws. Const: the
  // reference does not change, the resource it refers to does.
  void* allocate(std::size_t bytes, std::size_t alignment = 256) const { return allocate_(obj_, bytes, alignment); }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) const noexcept {
    deallocate_(obj_, p, bytes, alignment);
  }
  // True when both refer to the same resource object.
  friend bool operator==(const HostResourceRef& a, const HostResourceRef& b) noexcept { return a.obj_ == b.obj_; }

 private:
  void* obj_;
  void* (*allocate_)(void*, std::size_t, std::size_t);
  void (*deallocate_)(void*, void*, std::size_t, std::size_t) noexcept;
};

static_assert(HostResource<HostResourceRef>);

}  // namespace imgpipe::memory
