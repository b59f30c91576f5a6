// What the node suite's tests share. Header-only.
#pragma once

#include <gtest/gtest.h>

#include "chiprt/status.h"

namespace chiprt::node {

// The Error `call` throws (a test failure, and an Ok error, when it throws none).
template <class Call>
Error error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(StatusCode::Ok, "");
}

}  // namespace chiprt::node
