// A growable run of bytes whose growth leaves the new room uninitialised:
// the exposition writes ~1.3 MB of text per scrape at 1,000 cgroups, and a
// std::string sized ahead zeroes every byte it grows by before the text
// overwrites it (2 MB a scrape in steps of doubling; C++20 has no
// resize_and_overwrite). glibc's memset does that with `rep stosb`, which
// under emulation was 8.5 % of the scrape threads' samples in the 6.1
// systemd guest's profile (docs/performance.md).
//
// Kept across uses (clear() keeps the capacity), as the scrape cache keeps
// its values text; release() gives the memory back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

namespace memcg::text {

class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { std::free(data_); }
  Buffer(Buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // At least n writable bytes at the end, uninitialised; what is written
  // there counts once commit()ed. Throws std::bad_alloc as std::string does.
  char* room(size_t n) {
    if (cap_ - size_ < n) grow(size_ + n);
    return data_ + size_;
  }
  void commit(size_t n) noexcept { size_ += n; }
  void append(std::string_view s) {
    if (!s.empty()) std::memcpy(room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void clear() noexcept { size_ = 0; }
  // Frees the memory (the next write allocates again).
  void release() noexcept {
    std::free(std::exchange(data_, nullptr));
    size_ = cap_ = 0;
  }

  std::string_view view() const noexcept { return {data_, size_}; }
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return cap_; }

 private:
  // Doubles (at least 64 KiB), so a text grown from empty is copied a few
  // times at most; glibc's realloc of a large block moves its pages rather
  // than copying them.
  void grow(size_t need) {
    size_t cap = cap_ ? cap_ : size_t{64} << 10;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    void* p = std::realloc(data_, cap);
    if (!p) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
    cap_ = cap;
  }

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
};

}  // namespace memcg::text
