#include <string>

#include "bgemm/host/bgemm.h"
#include "chiprt/status.h"
#include "example.h"
#include "paged_attention/host/paged_attention.h"
#include "vector_example/host/vector_example.h"
#include "wavefront/host/wavefront.h"

namespace chiprt::examples {

int64_t ExampleCase::param(std::string_view key) const {
  for (const CaseParam& p : params) {
    if (p.name == key) return p.value;
  }
  throw Error(StatusCode::InvalidArgument, "case '" + name + "' has no parameter '" +
                                               std::string(key) + "' (has: " + params_text() + ")");
}

std::string ExampleCase::params_text() const {
  std::string text;
  for (const CaseParam& p : params) {
    if (!text.empty()) text += ' ';
    text += p.name + '=' + std::to_string(p.value);
  }
  return text;
}

RunReport run_on_worker(Worker& worker, int32_t callable_id, const TaskArgs& args,
                        const CallConfig& config) {
  return worker.run(callable_id, args, config);
}

Outcome Example::run(Worker& worker, const ExampleCase& example_case, const CallConfig& config,
                     const Executor& executor) const {
  if (!runner) {
    throw Error(StatusCode::InternalError,
                "example '" + name + "' has no runner (set Example::runner in its make_ function)");
  }
  return runner(worker, example_case, config, executor ? executor : Executor(run_on_worker));
}

const ExampleCase* Example::find_case(std::string_view case_name) const {
  for (const ExampleCase& c : cases) {
    if (c.name == case_name) return &c;
  }
  return nullptr;
}

std::string Example::case_names() const {
  std::string text;
  for (const ExampleCase& c : cases) {
    if (!text.empty()) text += ", ";
    text += c.name;
  }
  return text;
}

std::span<const Example> all_examples() {
  static const std::vector<Example> examples = {make_vector_example(), make_bgemm_example(),
                                                make_wavefront_example(),
                                                make_paged_attention_example()};
  return examples;
}

const Example* find_example(std::string_view name) {
  for (const Example& e : all_examples()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string example_names() {
  std::string text;
  for (const Example& e : all_examples()) {
    if (!text.empty()) text += ", ";
    text += e.name;
  }
  return text;
}

}  // namespace chiprt::examples
