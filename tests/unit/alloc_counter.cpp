#include "tests/unit/alloc_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_counting = false;
thread_local size_t g_count = 0;
}  // namespace

namespace memcg::testing {
AllocationCounter::AllocationCounter() {
  g_count = 0;
  g_counting = true;
}
AllocationCounter::~AllocationCounter() { g_counting = false; }
size_t AllocationCounter::count() const { return g_count; }
}  // namespace memcg::testing

void* operator new(std::size_t n) {
  if (g_counting) ++g_count;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
