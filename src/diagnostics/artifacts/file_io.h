// The run directory's file plumbing the artifact files share: a buffered writer formatting
// numbers with std::to_chars (TextOut), files written as NAME.tmp and renamed into place
// (OutFile), JSON and CSV quoting, and the readers' helpers (a whole JSON document, a CSV with its
// header, a JSON file one array element per line). Errors are chiprt::Error(DiagnosticsError)
// naming the file.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "diagnostics/run_model.h"

namespace chiprt::diagnostics::artifact {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& what);

// JSON string literal of `text` (invalid UTF-8 replaced rather than thrown on).
std::string quote(const std::string& text);
std::string dump(const json& value);

// Trace-event times are microseconds; three decimals keep the nanoseconds exactly.
struct Micros {
  uint64_t ns;
};
inline Micros micros(uint64_t ns) {
  return {ns};
}

// A buffered text file writer that formats numbers with std::to_chars: the writers emit a few
// numbers per task, and iostream formatting (locale, facets) made writing a run's files cost
// microseconds per task. The same `<<` syntax as a stream; errors surface at close.
class TextOut {
 public:
  TextOut() : buffer_(std::make_unique_for_overwrite<char[]>(kBufferBytes)) {}
  ~TextOut() { close(); }
  TextOut(const TextOut&) = delete;
  TextOut& operator=(const TextOut&) = delete;

  bool open(const std::string& path) {
    file_ = std::fopen(path.c_str(), "wb");
    ok_ = file_ != nullptr;
    return ok_;
  }
  // Flushes and closes; false when any write failed.
  bool close() {
    if (file_ == nullptr) return ok_;
    flush();
    if (std::fclose(file_) != 0) ok_ = false;
    file_ = nullptr;
    return ok_;
  }
  explicit operator bool() const { return ok_; }

  TextOut& write(const char* data, std::size_t bytes) {
    if (bytes == 0) return *this;  // data may be null (an empty args.bin)
    if (bytes > kBufferBytes - used_) {
      flush();
      if (bytes > kBufferBytes) {
        if (file_ != nullptr && std::fwrite(data, 1, bytes, file_) != bytes) ok_ = false;
        return *this;
      }
    }
    std::memcpy(buffer_.get() + used_, data, bytes);
    used_ += bytes;
    return *this;
  }
  TextOut& operator<<(std::string_view text) { return write(text.data(), text.size()); }
  TextOut& operator<<(const std::string& text) { return write(text.data(), text.size()); }
  TextOut& operator<<(const char* text) { return write(text, std::strlen(text)); }
  TextOut& operator<<(char c) { return write(&c, 1); }
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, char> && !std::is_same_v<T, bool>) TextOut&
  operator<<(T value) {
    char text[24];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return write(text, static_cast<std::size_t>(result.ptr - text));
  }
  TextOut& operator<<(bool value) { return *this << (value ? '1' : '0'); }
  TextOut& operator<<(double value) {
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return write(text, static_cast<std::size_t>(result.ptr - text));
  }
  TextOut& operator<<(Micros t) {
    char text[32];
    auto result = std::to_chars(text, text + sizeof text, t.ns / 1000);
    *result.ptr++ = '.';
    const uint64_t frac = t.ns % 1000;
    *result.ptr++ = static_cast<char>('0' + frac / 100);
    *result.ptr++ = static_cast<char>('0' + frac / 10 % 10);
    *result.ptr++ = static_cast<char>('0' + frac % 10);
    return write(text, static_cast<std::size_t>(result.ptr - text));
  }

 private:
  static constexpr std::size_t kBufferBytes = 256 << 10;
  void flush() {
    if (used_ != 0 && file_ != nullptr && std::fwrite(buffer_.get(), 1, used_, file_) != used_) {
      ok_ = false;
    }
    used_ = 0;
  }
  std::unique_ptr<char[]> buffer_;
  std::size_t used_ = 0;
  std::FILE* file_ = nullptr;
  bool ok_ = false;
};
uint64_t from_micros(double us);

std::string csv_time(uint64_t ns);
std::string csv_field(const std::string& text);

// Written to NAME.tmp and renamed on commit, so a reader never sees half a file under the real
// name; a buffered stream, so large files never sit in memory.
class OutFile {
 public:
  OutFile(const std::string& run_dir, const char* name)
      : name_(name), path_((fs::path(run_dir) / name).string()), tmp_(path_ + ".tmp") {
    if (!out_.open(tmp_)) fail(path_, "cannot open for writing");
  }
  ~OutFile() {
    if (!committed_) {
      out_.close();
      std::error_code ec;
      fs::remove(tmp_, ec);
    }
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  TextOut& out() { return out_; }
  // Closes and renames into place; returns the path.
  std::string commit() {
    if (!out_.close()) fail(path_, "write failed (disk full or the directory went away?)");
    std::error_code ec;
    fs::rename(tmp_, path_, ec);
    if (ec) fail(path_, "cannot rename " + tmp_ + " into place: " + ec.message());
    committed_ = true;
    return path_;
  }

 private:
  std::string name_;
  std::string path_;
  std::string tmp_;
  TextOut out_;
  bool committed_ = false;
};

// ", " between the elements of a hand-written JSON array.
class Separator {
 public:
  const char* next() { return first_ ? (first_ = false, "\n") : ",\n"; }

 private:
  bool first_ = true;
};

// The JSON key of ring 0..2 (task_window, heap, dep_pool).
const char* ring_key(int ring);
bool parse_core_type(const std::string& name, CoreType* out);

std::string file_path(const std::string& run_dir, const char* name);
bool exists(const std::string& run_dir, const char* name);
json read_json(const std::string& path);

template <typename T>
T number(const std::string& text, const std::string& path, size_t line, const char* column) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) {
    fail(path, "line " + std::to_string(line) + ": column " + column + ": not a number: \"" + text +
                   "\"");
  }
  return value;
}

uint64_t time_field(const std::string& text, const std::string& path, size_t line,
                    const char* column);
std::vector<std::string> split_csv(const std::string& line, const std::string& path,
                                   size_t line_number);

template <typename Row>
void read_csv(const std::string& path, const std::string& header, size_t columns, Row&& row) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string line;
  size_t number = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!have_header) {
      if (line.rfind(header, 0) != 0) {
        fail(path, "line " + std::to_string(number) + ": expected the header \"" + header + "\"");
      }
      have_header = true;
      continue;
    }
    std::vector<std::string> fields = split_csv(line, path, number);
    if (fields.size() < columns) {
      fail(path, "line " + std::to_string(number) + ": " + std::to_string(fields.size()) +
                     " field(s), expected " + std::to_string(columns));
    }
    row(fields, number);
  }
  if (!have_header) fail(path, "empty (no header line)");
}

// Our writers put one array element per line, so a million-task file is read a line at a time
// instead of as one document. Calls on_element(text, line) for each line that holds an element
// ('{' or '[' first, its trailing comma dropped); false when the file does not start with
// `first_line` (not in that layout: the caller parses it whole).
template <typename OnElement>
bool for_each_element_line(const std::string& path, const char* first_line,
                           OnElement&& on_element) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string line;
  if (!std::getline(in, line) || line != first_line) return false;
  size_t number = 1;
  std::string last;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    last = line;
    if (line[0] != '{' && line[0] != '[') continue;
    if (line.back() == ',') line.pop_back();
    on_element(line, number);
  }
  if (last != "]}") fail(path, "line " + std::to_string(number) + ": truncated (no closing ]})");
  return true;
}

json parse_line(const std::string& text, const std::string& path, size_t line);

}  // namespace chiprt::diagnostics::artifact
