// The text exposition (format 0.0.4) written straight from the snapshot:
// the sink every scrape uses (metrics.h: render_text and its parts).
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include "base/text/short_bytes.h"
#include "exporter/exposition/families.h"
#include "plugin/utf8.h"

namespace memcg::exporter {
namespace {

// Bytes a label value cannot carry as they are: backslash, quote and the
// controls (newline included), and every byte of a multi-byte sequence,
// which is checked for UTF-8.
constexpr std::array<bool, 256> kNeedsCare = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = c >= 0x80 || is_control(static_cast<unsigned char>(c)) || c == '\\' || c == '"';
  return t;
}();

// The text under construction, written at the end of a text::Buffer (grown
// without being zeroed first). Each piece of a line is copied inline
// (text::copy_short) instead of by a call to memcpy: five or six pieces a
// line and ~22,700 lines a scrape at 1,000 cgroups, each call costing more
// to make than its 10-80 bytes to copy.
class TextOut {
 public:
  explicit TextOut(text::Buffer& b) : b_(b) {}
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;
  TextOut& append(std::string_view v) {
    text::copy_short(b_.room(v.size()), v.data(), v.size());
    b_.commit(v.size());
    return *this;
  }
  void push_back(char c) {
    *b_.room(1) = c;
    b_.commit(1);
  }
  // Room for a line of up to kMaxLine bytes written in place, then kept
  // with commit(): a line composed there is copied once, not twice.
  static constexpr size_t kMaxLine = 512;
  char* line_room() { return b_.room(kMaxLine); }
  void commit(size_t n) noexcept { b_.commit(n); }

 private:
  text::Buffer& b_;
};

// The text sink: writes samples as they come. The family header is written
// before its first sample, so families without samples vanish as above.
class TextSink final : public SampleSink {
 public:
  TextSink(TextOut& out, const MetricDef& def) : out_(out), def_(def) {}
  void bind(std::string_view cgroup_id, const Labels* extra) {
    cgroup_id_ = cgroup_id;
    extra_ = extra;
  }
  void add_labels(double value, std::span<const Label> labels) override {
    header();
    if (compose_line(value, labels)) return;
    out_.append(def_.name);
    labels_open(labels, {}, 0);
    out_.push_back(' ');
    number(value);
    out_.push_back('\n');
  }
  void add_histogram(const HistogramValue& h) override {
    header();
    out_.append(def_.name).append("_count");
    labels_open({}, {}, 0);
    out_.push_back(' ');
    number(static_cast<double>(h.sample_count));
    out_.push_back('\n');
    out_.append(def_.name).append("_sum");
    labels_open({}, {}, 0);
    out_.push_back(' ');
    number(h.sample_sum);
    out_.push_back('\n');
    for (const auto& b : h.bucket) {
      out_.append(def_.name).append("_bucket");
      labels_open({}, "le", b.upper_bound);
      out_.push_back(' ');
      number(static_cast<double>(b.cumulative_count));
      out_.push_back('\n');
    }
  }

 private:
  void header() {
    if (started_) return;
    started_ = true;
    out_.append("# HELP ").append(def_.name).push_back(' ');
    out_.append(def_.help).push_back('\n');
    out_.append("# TYPE ").append(def_.name).push_back(' ');
    out_.append(type_name(def_.type)).push_back('\n');
  }
  void label(std::string_view k, std::string_view v, bool& first) {
    out_.push_back(first ? '{' : ',');
    first = false;
    out_.append(k).append("=\"");
    // Runs without a character to escape (all of a cgroup path, usually) are
    // appended whole rather than byte by byte.
    // Bytes that are not UTF-8 become U+FFFD (see plugin/utf8.h).
    size_t run = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const char c = v[i];
      if (!kNeedsCare[static_cast<unsigned char>(c)]) continue;  // one load per byte on the common path
      if (static_cast<unsigned char>(c) >= 0x80) {
        const size_t len = utf8_sequence_length(v, i);
        if (len > 0) {
          i += len - 1;
          continue;
        }
        out_.append(v.substr(run, i - run)).append(kReplacementCharacter);
        run = i + 1;
        continue;
      }
      if (c != '\\' && c != '"' && c != '\n') {
        // Other controls (ESC, CR, BEL) are valid in the format but rewrite
        // the terminal of whoever curls /metrics: U+FFFD, as for non-UTF-8.
        out_.append(v.substr(run, i - run)).append(kReplacementCharacter);
        run = i + 1;
        continue;
      }
      out_.append(v.substr(run, i - run)).append(c == '\\' ? "\\\\" : c == '"' ? "\\\"" : "\\n");
      run = i + 1;
    }
    out_.append(v.substr(run));
    out_.push_back('"');
  }
  // A line without a byte to escape (every value line: the cgroup is its
  // id) is composed in place at the end of the text and kept whole, instead
  // of in ten appends and pushes; the rest take the general path below.
  class LineWriter {
   public:
    explicit LineWriter(char* buf) noexcept : buf_(buf) {}
    void put(std::string_view s) noexcept {
      if (s.size() > TextOut::kMaxLine - n_) {
        overflow_ = true;
        return;
      }
      text::copy_short(buf_ + n_, s.data(), s.size());
      n_ += s.size();
    }
    // A literal's size is known here, so its copy (a bracket, a quote, a
    // separator: about half of a line's copies) is inlined rather than a
    // call to memcpy.
    template <size_t N>
    void put(const char (&s)[N]) noexcept {
      if (N - 1 > TextOut::kMaxLine - n_) {
        overflow_ = true;
        return;
      }
      std::memcpy(buf_ + n_, s, N - 1);
      n_ += N - 1;
    }
    bool label(std::string_view k, std::string_view v, bool& first) noexcept {
      for (const char c : v)
        if (kNeedsCare[static_cast<unsigned char>(c)]) return false;
      if (first) put("{");
      else put(",");
      first = false;
      put(k);
      put("=\"");
      put(v);
      put("\"");
      return true;
    }
    // The line's length; nullopt when it did not fit.
    std::optional<size_t> size() const noexcept {
      if (overflow_) return std::nullopt;
      return n_;
    }

   private:
    char* buf_;  // TextOut::kMaxLine bytes
    size_t n_ = 0;
    bool overflow_ = false;
  };
  bool compose_line(double value, std::span<const Label> labels) {
    LineWriter w(out_.line_room());
    w.put(def_.name);
    bool first = true;
    if (!cgroup_id_.empty()) {  // digits only: nothing to escape
      w.put("{cgroup_id=\"");
      w.put(cgroup_id_);
      w.put("\"");
      first = false;
    }
    if (extra_)
      for (const auto& [k, v] : *extra_)
        if (!w.label(k, v, first)) return false;
    for (const auto& [k, v] : labels)
      if (!w.label(k, v, first)) return false;
    if (first) w.put(" ");
    else w.put("} ");
    char buf[32];
    w.put(format(value, buf));
    w.put("\n");
    const auto n = w.size();
    if (n) out_.commit(*n);
    return n.has_value();
  }
  void labels_open(std::span<const Label> labels, std::string_view le_key, double le) {
    bool first = true;
    if (!cgroup_id_.empty()) {  // digits only: nothing to escape
      out_.append("{cgroup_id=\"").append(cgroup_id_).push_back('"');
      first = false;
    }
    if (extra_)
      for (const auto& [k, v] : *extra_) label(k, v, first);
    for (const auto& [k, v] : labels) label(k, v, first);
    if (!le_key.empty()) {
      char buf[32];
      label(le_key, format(le, buf), first);
    }
    if (!first) out_.push_back('}');
  }
  // prometheus-cpp's number format: %.16g (max_digits10 - 1), +Inf/-Inf/Nan.
  static std::string_view format(double v, char (&buf)[32]) {
    if (std::isnan(v)) return "Nan";
    if (std::isinf(v)) return v < 0 ? "-Inf" : "+Inf";
    // Most values are byte counts and counters: %.16g prints an integer below
    // 1e15 as plain digits, which to_chars does several times faster.
    if (std::fabs(v) < 1e15 && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
      return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
    }
    // to_chars with a precision is specified as printf's %.*g, byte for
    // byte, and is several times faster than snprintf (timestamps, seconds).
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 16);
    return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
  }
  void number(double v) {
    char buf[32];
    out_.append(format(v, buf));
  }

  TextOut& out_;
  const MetricDef& def_;
  std::string_view cgroup_id_;
  const Labels* extra_ = nullptr;
  bool started_ = false;
};

void render(const ScrapeContext& ctx, text::Buffer& out, Families which, std::vector<size_t>* starts = nullptr) {
  TextOut text(out);
  std::vector<std::unique_ptr<TextSink>> sinks;
  for_each_family(
      ctx,
      [&](const MetricDef& def) {
        if (starts) starts->push_back(out.size());  // families are written one after another
        sinks.push_back(std::make_unique<TextSink>(text, def));
        return sinks.back().get();
      },
      which);
}

// The std::string forms, for callers other than the scrape cache: the text
// is written into a buffer of its own and appended whole.
void render(const ScrapeContext& ctx, std::string& out, Families which) {
  text::Buffer b;
  render(ctx, b, which);
  out.append(b.view());
}

}  // namespace

void render_text(const ScrapeContext& ctx, std::string& out) { render(ctx, out, Families::all); }
void render_identity(const ScrapeContext& ctx, std::string& out) { render(ctx, out, Families::identity); }
void render_values(const ScrapeContext& ctx, std::string& out) { render(ctx, out, Families::values); }
void render_values(const ScrapeContext& ctx, text::Buffer& out, std::vector<size_t>* family_starts) {
  render(ctx, out, Families::values, family_starts);
}

}  // namespace memcg::exporter
