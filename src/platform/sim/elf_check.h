// check_elf_object: validates a chip object (a shared object image for this host) before the
// host's dynamic loader maps it.
//
// The loader trusts what an ELF object says about itself: a truncated or corrupted object makes it
// map pages past the end of the file (SIGBUS), read tables through wild pointers (SIGSEGV), run
// code from the wrong place (SIGILL) or fail one of its internal assertions (exit 127), all inside
// the caller's process. check_elf_object reads the image as data, with every offset and size
// checked, and rejects what the loader could not survive: the ELF header; the program headers
// (every segment inside the image, loadable segments ascending and apart, sane alignment); the
// section headers, against which every segment is cross-checked (a section must sit where its
// segment maps it, with its permissions); and the dynamic section the loader interprets
// (string, symbol, hash, relocation, version and init tables inside the mapped image, every
// relocation target writable, every symbol and hash chain in range).
//
// Pure function of the bytes: no allocation beyond a few small tables, no state, thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "chiprt/status.h"

namespace chiprt::platform::sim {

// Ok, or LoadFailed with a message naming the ELF structure and field that is wrong, e.g.
// "ELF program header 3 (PT_LOAD): p_offset + p_filesz = 12296 exceeds the object size 8000
// (truncated?)".
Status check_elf_object(std::span<const uint8_t> image);

}  // namespace chiprt::platform::sim
