// A minimal streaming JSON writer (objects, arrays, strings, numbers) with
// pretty-printing. Non-finite doubles are written as null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memcg {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, bool pretty = true) : out_(out), pretty_(pretty) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();

 private:
  void before_value();
  void newline();

  std::string& out_;
  bool pretty_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

void append_json_escaped(std::string& out, std::string_view s);

}  // namespace memcg
