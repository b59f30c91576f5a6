// The func_id and `kernel` column of each row of a run directory's tasks.csv, read as a user's
// tool would read the file (the kernel field may be quoted), for the tests that check what the
// runs call their kernels (tests/unit/host/kernel_names_test.cpp,
// tests/scene/kernel_names_scene_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace chiprt::test {

struct TaskRowKernel {
  int32_t func_id = -1;  // -1: a dependency-only task
  std::string kernel;    // "<display name> (func N)", "func N" or "dependency-only"
  std::string line;      // the whole row, for messages
};

// Every row after the header (an unreadable file or a short row is a gtest failure).
inline std::vector<TaskRowKernel> tasks_csv_kernels(const std::string& run_dir) {
  std::vector<TaskRowKernel> rows;
  std::ifstream in(run_dir + "/tasks.csv");
  std::string line;
  if (!std::getline(in, line)) {
    ADD_FAILURE() << run_dir << "/tasks.csv: cannot read its header";
    return rows;
  }
  EXPECT_EQ(line.rfind("task,block,func_id,kernel,", 0), 0u) << line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        fields.push_back(field);
        field.clear();
      } else {
        field += c;
      }
    }
    fields.push_back(field);
    if (fields.size() < 4) {
      ADD_FAILURE() << "tasks.csv: short row '" << line << "'";
      continue;
    }
    rows.push_back({static_cast<int32_t>(std::stoi(fields[2])), fields[3], line});
  }
  return rows;
}

}  // namespace chiprt::test
