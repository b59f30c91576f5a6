// libFuzzer target for the chip object path (check_elf_object, then the sim ObjectLoader's
// dlopen): a corrupted kernel object must be rejected with LoadFailed and a message, or load and
// compute the right result. A crash, a sanitizer report, another status code or a wrong result
// aborts the fuzzer.
//
// The input corrupts a real kernel object built by the project (vector_example_add.so from the
// build tree; CHIPRT_FUZZ_KERNEL_OBJECT names another). Its first byte picks what, the rest says
// how; XOR masks, so that an all-zero input is the unmodified object and the fuzzer starts there:
//   0  XOR onto the ELF header and the program header table          (loaded)
//   1  XOR onto the dynamic section                                   (loaded, see below)
//   2  XOR onto the section header table                              (loaded)
//   3  truncate to (the next 4 bytes, little-endian) mod its size     (loaded)
//   4  XOR at (the next 4 bytes) mod its size, anywhere in the object (checked only)
//   5  the rest of the input is an object image                       (checked only)
// check_elf_object pins DT_INIT and DT_FINI to the start of a function, not to the right one: a
// mode-1 input that moves either is checked only, since calling another function as an
// initialiser is not something the loader's structures can reveal. Modes 4 and 5 change code and
// data bytes the validator does not judge (which function a relocation or a symbol names), so they
// are checked only: the promise there is that check_elf_object never reads outside the input
// (ASan) and always answers. Object code corruption is the container checksum's part
// (fuzz_callable_parser).
//
// Run: build/fuzz/tests/fuzz/fuzz_object_loader -max_len=4096 -detect_leaks=0
// (leak detection off: an input may set DF_1_NODELETE, which keeps that object loaded for good).
#include <elf.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <vector>

#include "chiprt/callable.h"
#include "platform/sim/elf_check.h"
#include "platform/sim/object_loader.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_object_loader: %s\n", what);
    std::abort();
  }
}

struct Seed {
  std::vector<uint8_t> image;
  std::size_t dynamic_offset = 0, dynamic_size = 0;
  std::size_t headers_size = 0;
  std::size_t section_table_offset = 0, section_table_size = 0;
  uint64_t init = 0, fini = 0;  // DT_INIT, DT_FINI
};

uint64_t dynamic_value(const std::vector<uint8_t>& image, const Seed& seed, int64_t tag) {
  for (std::size_t at = seed.dynamic_offset;
       at + sizeof(Elf64_Dyn) <= seed.dynamic_offset + seed.dynamic_size; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, image.data() + at, sizeof(d));
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == tag) return d.d_un.d_val;
  }
  return 0;
}

const Seed& seed() {
  static const Seed s = [] {
    Seed out;
    const char* path = std::getenv("CHIPRT_FUZZ_KERNEL_OBJECT");
    if (path == nullptr || *path == '\0') path = CHIPRT_FUZZ_KERNEL_OBJECT;
    std::ifstream file(path, std::ios::binary);
    out.image.assign(std::istreambuf_iterator<char>(file), {});
    require(
        chiprt::platform::sim::check_elf_object(out.image).is_ok(),
        "the seed kernel object does not pass check_elf_object (set CHIPRT_FUZZ_KERNEL_OBJECT)");
    Elf64_Ehdr eh;
    std::memcpy(&eh, out.image.data(), sizeof(eh));
    out.headers_size = eh.e_phoff + std::size_t{eh.e_phnum} * sizeof(Elf64_Phdr);
    out.section_table_offset = eh.e_shoff;
    out.section_table_size = std::size_t{eh.e_shnum} * sizeof(Elf64_Shdr);
    for (std::size_t i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      std::memcpy(&ph, out.image.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
      if (ph.p_type == PT_DYNAMIC) {
        out.dynamic_offset = ph.p_offset;
        out.dynamic_size = ph.p_filesz;
      }
    }
    out.init = dynamic_value(out.image, out, DT_INIT);
    out.fini = dynamic_value(out.image, out, DT_FINI);
    return out;
  }();
  return s;
}

void xor_onto(std::vector<uint8_t>& image, std::size_t offset, std::size_t size,
              std::span<const uint8_t> mask) {
  for (std::size_t i = 0; i < mask.size() && i < size; ++i) image[offset + i] ^= mask[i];
}

// The loaded add kernel must compute out[i] = x[i] + y[i].
void require_add_kernel_works(chiprt::platform::sim::ObjectLoader& loader, uint64_t handle) {
  uint64_t addr = 0;
  const chiprt::Status resolved = loader.resolve(handle, chiprt::kKernelSymbol, &addr);
  if (!resolved.is_ok()) {
    // A corrupted symbol or hash table may hide the symbol: a clean error is fine.
    require(resolved.code() == chiprt::StatusCode::LoadFailed, "resolve: not LoadFailed");
    return;
  }
  float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, out[4] = {};
  int64_t args[6] = {reinterpret_cast<int64_t>(x),
                     reinterpret_cast<int64_t>(y),
                     reinterpret_cast<int64_t>(out),
                     4,
                     0,
                     1};
  reinterpret_cast<chiprt::KernelEntry>(addr)(args);
  require(out[0] == 11 && out[1] == 22 && out[2] == 33 && out[3] == 44,
          "a corrupted object loaded and computed a wrong result");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Seed& s = seed();
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  std::vector<uint8_t> image = s.image;
  bool load = true;
  uint32_t at = 0;  // modes 3 and 4: the next 4 bytes
  std::memcpy(&at, rest.data(), std::min<std::size_t>(rest.size(), sizeof(at)));
  switch (data[0] % 6) {
    case 0:
      xor_onto(image, 0, s.headers_size, rest);
      break;
    case 1:
      xor_onto(image, s.dynamic_offset, s.dynamic_size, rest);
      load =
          dynamic_value(image, s, DT_INIT) == s.init && dynamic_value(image, s, DT_FINI) == s.fini;
      break;
    case 2:
      xor_onto(image, s.section_table_offset, s.section_table_size, rest);
      break;
    case 3:
      image.resize(at % image.size());
      break;
    case 4: {
      const std::size_t offset = at % image.size();
      xor_onto(image, offset, image.size() - offset,
               rest.subspan(std::min<std::size_t>(rest.size(), sizeof(at))));
      load = false;
      break;
    }
    default:
      image.assign(rest.begin(), rest.end());
      load = false;
      break;
  }
  // An exact-size copy, so that ASan sees a read past the end.
  const std::vector<uint8_t> exact(image.begin(), image.end());
  const chiprt::Status checked = chiprt::platform::sim::check_elf_object(exact);
  require(checked.is_ok() ||
              (checked.code() == chiprt::StatusCode::LoadFailed && !checked.message().empty()),
          "check_elf_object: neither ok nor LoadFailed with a message");
  if (!load || !checked.is_ok() || exact.empty()) return 0;

  static chiprt::platform::sim::ObjectLoader loader;
  uint64_t handle = 0;
  const chiprt::Status loaded = loader.load(exact, &handle);
  if (!loaded.is_ok()) {
    require(loaded.code() == chiprt::StatusCode::LoadFailed && !loaded.message().empty(),
            "load: neither ok nor LoadFailed with a message");
    return 0;
  }
  require_add_kernel_works(loader, handle);
  require(loader.unload(handle).is_ok(), "unload failed");
  return 0;
}
