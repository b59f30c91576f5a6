#include "diagnostics/artifacts/files.h"

namespace chiprt::diagnostics::artifact {
namespace {

bool parse_arg_tag(const std::string& name, ArgTag* out) {
  for (int i = 0; i < kArgTagCount; ++i) {
    if (arg_tag_name(static_cast<ArgTag>(i)) == name) {
      *out = static_cast<ArgTag>(i);
      return true;
    }
  }
  return false;
}

// Written with TextOut rather than a json value per record: a json object per tensor made
// args.json the slowest file of a run (bgemm, 1536 arguments: 5.5 ms of a 27 ms run).
void write_u64_list(TextOut& out, const std::vector<uint64_t>& values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  out << ']';
}

void write_data(TextOut& out, const TensorArgRecord::Data& d) {
  out << "{\"present\":" << (d.present ? "true" : "false") << ",\"offset\":" << d.offset
      << ",\"bytes\":" << d.bytes << ",\"wanted_bytes\":" << d.wanted_bytes << '}';
}

TensorArgRecord::Data read_data(const json& j) {
  return {j.at("present").get<bool>(), j.at("offset").get<uint64_t>(),
          j.at("bytes").get<uint64_t>(), j.at("wanted_bytes").get<uint64_t>()};
}

}  // namespace

void write_args(TextOut& out, const RunModel& model, const ArgsData& data) {
  out << "{\"bin_file\":\"" << kArgsBinFile << "\",\"bin_bytes\":" << data.bytes.size()
      << ",\n\"records\":[";
  Separator sep;
  // Tag and dtype names are identifiers: no escaping needed.
  for (const TensorArgRecord& a : model.args) {
    out << sep.next() << "{\"task\":" << a.task << ",\"index\":" << a.index << ",\"tag\":\""
        << arg_tag_name(a.tag) << "\",\"buffer_addr\":" << a.buffer_addr
        << ",\"start_offset\":" << a.start_offset << ",\"dtype\":\"" << dtype_name(a.dtype)
        << "\",\"shape\":";
    write_u64_list(out, a.shape);
    out << ",\"strides\":";
    write_u64_list(out, a.strides);
    out << ",\"before\":";
    write_data(out, a.before);
    out << ",\"after\":";
    write_data(out, a.after);
    out << '}';
  }
  out << "\n],\n\"left_out\":[";
  Separator left_sep;
  for (const TensorArgRecord& a : model.args) {
    for (const auto& [phase, d] : {std::pair{"before", &a.before}, std::pair{"after", &a.after}}) {
      if (d->bytes == 0 && d->wanted_bytes > 0) {
        out << left_sep.next() << "{\"task\":" << a.task << ",\"index\":" << a.index
            << ",\"phase\":\"" << phase << "\",\"wanted_bytes\":" << d->wanted_bytes << '}';
      }
    }
  }
  out << "]}\n";
}

void read_args(const std::string& path, RunModel& model) {
  const json args = read_json(path);
  try {
    for (const json& r : args.at("records")) {
      TensorArgRecord a;
      a.task = r.at("task").get<uint64_t>();
      a.index = r.at("index").get<uint32_t>();
      if (!parse_arg_tag(r.at("tag").get<std::string>(), &a.tag)) {
        fail(path, "task " + std::to_string(a.task) + ": unknown tag " + r.at("tag").dump());
      }
      a.buffer_addr = r.at("buffer_addr").get<uint64_t>();
      a.start_offset = r.at("start_offset").get<uint64_t>();
      if (!parse_dtype(r.at("dtype").get<std::string>(), &a.dtype)) {
        fail(path, "task " + std::to_string(a.task) + ": unknown dtype " + r.at("dtype").dump());
      }
      a.shape = r.at("shape").get<std::vector<uint64_t>>();
      a.strides = r.at("strides").get<std::vector<uint64_t>>();
      a.before = read_data(r.at("before"));
      a.after = read_data(r.at("after"));
      model.args.push_back(std::move(a));
    }
  } catch (const json::exception& e) {
    fail(path, std::string("malformed: ") + e.what());
  }
}

}  // namespace chiprt::diagnostics::artifact
