// ScopedEnv: sets a process environment variable for one scope and restores its previous value
// (or unsets it) afterwards. For tests of code that reads the process environment; not
// thread-safe (setenv), so use it while no other thread reads the environment.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace chiprt::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace chiprt::test
