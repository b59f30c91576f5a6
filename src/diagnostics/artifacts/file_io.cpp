#include "diagnostics/artifacts/file_io.h"

#include "chiprt/status.h"

namespace chiprt::diagnostics::artifact {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw Error(StatusCode::DiagnosticsError, file + ": " + what);
}

std::string quote(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

uint64_t from_micros(double us) {
  return static_cast<uint64_t>(std::llround(us * 1000.0));
}

std::string csv_time(uint64_t ns) {
  return ns == kNoTime ? std::string() : std::to_string(ns);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

const char* ring_key(int ring) {
  static constexpr const char* kKeys[3] = {"task_window", "heap", "dep_pool"};
  return kKeys[ring];
}

bool parse_core_type(const std::string& name, CoreType* out) {
  for (int i = 0; i < kCoreTypeCount; ++i) {
    if (core_type_name(static_cast<CoreType>(i)) == name) {
      *out = static_cast<CoreType>(i);
      return true;
    }
  }
  return false;
}

std::string file_path(const std::string& run_dir, const char* name) {
  return (fs::path(run_dir) / name).string();
}

bool exists(const std::string& run_dir, const char* name) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(run_dir) / name, ec);
}

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "missing or unreadable");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const size_t upto = std::min<size_t>(e.byte, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(upto), '\n');
    fail(path, "line " + std::to_string(line) + ": malformed JSON (" + e.what() + ")");
  }
}

uint64_t time_field(const std::string& text, const std::string& path, size_t line,
                    const char* column) {
  return text.empty() ? kNoTime : number<uint64_t>(text, path, line, column);
}

std::vector<std::string> split_csv(const std::string& line, const std::string& path,
                                   size_t line_number) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          fields.back() += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) fail(path, "line " + std::to_string(line_number) + ": unterminated quote");
  return fields;
}

json parse_line(const std::string& text, const std::string& path, size_t line) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, "line " + std::to_string(line) + ": malformed JSON (" + e.what() + ")");
  }
}

}  // namespace chiprt::diagnostics::artifact
