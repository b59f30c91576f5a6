// How the host's device machinery names, in its error texts, the public object the user holds:
// a Worker, or a chip of a Node. A refused call, a faulted device or a stray buffer is
// then explained in the calls the user can actually make ("call Node::reset_chip(2)"), not in
// those of an object they never created. Plain data, copied into each runner at its creation.
#pragma once

#include <string>

namespace chiprt::host {

struct FacadeText {
  // The class whose calls are refused: "<owner>::<call> called ...". A string literal, so that it
  // outlives every run and handle that quotes it.
  const char* owner = "Worker";
  // The call that replaces a faulted device ("call <reset_call>").
  std::string reset_call = "Worker::reset()";
  // The call that allocates the buffers a run's arguments must name.
  std::string malloc_call = "Worker::malloc";
};

}  // namespace chiprt::host
