// Corrupt and truncated chip objects on the simulated chip: every truncation and every single-bit
// flip of the ELF header and program headers of a real kernel object built by the project either
// loads and computes the right result, or is rejected with LoadFailed naming the field. The
// process must survive each one, so the sweeps run in a forked child: a loader crash fails the
// test with the signal and the input that caused it instead of killing the test binary.
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "platform/sim/elf_check.h"
#include "platform/sim/object_loader.h"
#include "support.h"

namespace chiprt::platform {
namespace {

// The add kernel of the vector example: out[i] = x[i] + y[i].
std::vector<uint8_t> kernel_image() {
  return examples::read_chip_object("vector_example_add");
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

enum class Outcome { Rejected, Works, Broken };

// What a load must do with a corrupt image: be rejected with LoadFailed and a message, or load
// and work (`works` checks the loaded object and says what is wrong with it, or "").
Outcome load_and_check(sim::ObjectLoader& loader, std::span<const uint8_t> image,
                       const std::function<std::string(sim::ObjectLoader&, uint64_t)>& works,
                       std::string* why) {
  uint64_t handle = 0;
  const Status loaded = loader.load(image, &handle);
  if (!loaded.is_ok()) {
    if (loaded.code() != StatusCode::LoadFailed || loaded.message().empty()) {
      *why = "rejected with " + loaded.to_string() + " instead of LoadFailed";
      return Outcome::Broken;
    }
    *why = loaded.message();
    return Outcome::Rejected;
  }
  *why = works(loader, handle);
  (void)loader.unload(handle);
  return why->empty() ? Outcome::Works : Outcome::Broken;
}

// A loaded add kernel must compute the right sums.
std::string add_kernel_works(sim::ObjectLoader& loader, uint64_t handle) {
  uint64_t addr = 0;
  const Status resolved = loader.resolve(handle, kKernelSymbol, &addr);
  if (!resolved.is_ok())
    return "loaded, but kernel_entry does not resolve: " + resolved.to_string();
  float x[4] = {1, 2, 3, 4};
  float y[4] = {10, 20, 30, 40};
  float out[4] = {};
  int64_t args[6] = {reinterpret_cast<int64_t>(x),
                     reinterpret_cast<int64_t>(y),
                     reinterpret_cast<int64_t>(out),
                     4,
                     0,
                     1};
  reinterpret_cast<KernelEntry>(addr)(args);
  const bool right = out[0] == 11 && out[1] == 22 && out[2] == 33 && out[3] == 44;
  return right ? "" : "loaded, but the kernel computed a wrong result";
}

Outcome load_and_run(sim::ObjectLoader& loader, std::span<const uint8_t> image, std::string* why) {
  return load_and_check(loader, image, add_kernel_works, why);
}

// The loader's verdict on a corrupt image, which must be LoadFailed.
Status load_status(std::span<const uint8_t> image) {
  sim::ObjectLoader loader;
  uint64_t handle = 0;
  const Status status = loader.load(image, &handle);
  if (status.is_ok()) (void)loader.unload(handle);
  return status;
}

template <class T>
T read_at(const std::vector<uint8_t>& image, std::size_t offset) {
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}
template <class T>
void write_at(std::vector<uint8_t>& image, std::size_t offset, T value) {
  std::memcpy(image.data() + offset, &value, sizeof(T));
}
std::size_t phdr_offset(const std::vector<uint8_t>& image, std::size_t i) {
  return read_at<Elf64_Ehdr>(image, 0).e_phoff + i * sizeof(Elf64_Phdr);
}
// The file offset of the dynamic entry with `tag` (0 when there is none).
std::size_t dynamic_entry(const std::vector<uint8_t>& image, int64_t tag) {
  const auto ehdr = read_at<Elf64_Ehdr>(image, 0);
  for (std::size_t i = 0; i < ehdr.e_phnum; ++i) {
    const auto ph = read_at<Elf64_Phdr>(image, phdr_offset(image, i));
    if (ph.p_type != PT_DYNAMIC) continue;
    for (std::size_t at = ph.p_offset; at < ph.p_offset + ph.p_filesz; at += sizeof(Elf64_Dyn)) {
      if (read_at<Elf64_Dyn>(image, at).d_tag == tag) return at;
    }
  }
  return 0;
}

struct SweepResult {
  int works = 0;
  int rejected = 0;
  std::vector<std::string> failures;  // a crash, a wrong error code, a broken load
};

// Runs inputs 0..count-1 through `probe` in forked children. A child that dies (signal, loader
// assertion) is recorded as a failure for the input it was on, and the sweep resumes after it in a
// fresh child. Progress and counts travel through a shared page.
using Probe = std::function<Outcome(sim::ObjectLoader&, std::span<const uint8_t>, std::string*)>;
SweepResult sweep_in_child(int count, const std::function<std::vector<uint8_t>(int)>& make_input,
                           const std::function<std::string(int)>& describe,
                           const Probe& probe = load_and_run) {
  struct Shared {
    int current;
    int works;
    int rejected;
    int broken;
    char last_broken[512];
  };
  void* page =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  SweepResult result;
  if (page == MAP_FAILED) {
    result.failures.push_back("mmap of the shared page failed");
    return result;
  }
  auto* shared = static_cast<Shared*>(page);
  std::memset(shared, 0, sizeof(Shared));
  constexpr std::size_t kMaxReported = 40;
  int next = 0;
  while (next < count && result.failures.size() < kMaxReported) {
    const pid_t pid = fork();
    if (pid < 0) {
      result.failures.push_back("fork failed");
      break;
    }
    if (pid == 0) {
      sim::ObjectLoader loader;
      for (int i = next; i < count; ++i) {
        shared->current = i;
        const std::vector<uint8_t> input = make_input(i);
        std::string why;
        switch (probe(loader, input, &why)) {
          case Outcome::Works:
            ++shared->works;
            break;
          case Outcome::Rejected:
            ++shared->rejected;
            break;
          case Outcome::Broken:
            ++shared->broken;
            std::snprintf(shared->last_broken, sizeof(shared->last_broken), "%s: %s",
                          describe(i).c_str(), why.c_str());
            _exit(3);
        }
      }
      shared->current = count;
      _exit(0);
    }
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) break;
    const int at = shared->current;
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 3) {
      result.failures.push_back(shared->last_broken);
    } else if (WIFSIGNALED(wstatus)) {
      result.failures.push_back(describe(at) + ": the process died of signal " +
                                std::to_string(WTERMSIG(wstatus)) + " (" +
                                strsignal(WTERMSIG(wstatus)) + ")");
    } else {
      result.failures.push_back(describe(at) + ": the process exited with status " +
                                std::to_string(WEXITSTATUS(wstatus)) + " (a loader assertion?)");
    }
    next = at + 1;
  }
  result.works = shared->works;
  result.rejected = shared->rejected;
  munmap(page, sizeof(Shared));
  return result;
}

std::string report(const SweepResult& r) {
  std::string text = std::to_string(r.works) + " loaded and ran correctly, " +
                     std::to_string(r.rejected) + " were rejected, " +
                     std::to_string(r.failures.size()) + " failed (at most 40 are listed):";
  for (const std::string& f : r.failures) text += "\n  " + f;
  return text;
}

TEST(ObjectValidationTest, TheUnmodifiedKernelObjectLoadsAndRuns) {
  const std::vector<uint8_t> image = kernel_image();
  sim::ObjectLoader loader;
  std::string why;
  EXPECT_EQ(load_and_run(loader, image, &why), Outcome::Works) << why;
}

TEST(ObjectValidationTest, EveryTruncationOfAKernelObjectIsRejectedOrLoads) {
  const std::vector<uint8_t> image = kernel_image();
  const int sizes = static_cast<int>(image.size());  // lengths 1 .. size-1
  const SweepResult r = sweep_in_child(
      sizes - 1,
      [&](int i) { return std::vector<uint8_t>(image.begin(), image.begin() + (i + 1)); },
      [](int i) { return "truncated to " + std::to_string(i + 1) + " bytes"; });
  EXPECT_TRUE(r.failures.empty()) << report(r);
  EXPECT_EQ(r.works + r.rejected, sizes - 1) << report(r);
}

// Single-bit flips of the ELF header and the program header table of `image`: every one, or
// (`sampled`) one bit of each byte, rotating (bit 0 of byte 0, bit 1 of byte 1, ...).
SweepResult sweep_header_bit_flips(const std::vector<uint8_t>& image, const Probe& probe,
                                   bool sampled, int* flips) {
  const auto ehdr = read_at<Elf64_Ehdr>(image, 0);
  EXPECT_EQ(ehdr.e_phoff, sizeof(ehdr)) << "the program headers are expected after the ELF header";
  const int bytes = static_cast<int>(sizeof(ehdr) + ehdr.e_phnum * sizeof(Elf64_Phdr));
  std::vector<int> bits;  // byte * 8 + bit
  for (int i = 0; i < bytes * 8; ++i) {
    const int byte = i / 8;
    if (!sampled || i % 8 == byte % 8) bits.push_back(i);
  }
  *flips = static_cast<int>(bits.size());
  return sweep_in_child(
      *flips,
      [&](int k) {
        std::vector<uint8_t> flipped = image;
        flipped[static_cast<std::size_t>(bits[k] / 8)] ^= static_cast<uint8_t>(1u << (bits[k] % 8));
        return flipped;
      },
      [&](int k) {
        return "bit " + std::to_string(bits[k] % 8) + " of byte " + std::to_string(bits[k] / 8) +
               " flipped";
      },
      probe);
}

TEST(ObjectValidationTest, EveryBitFlipOfTheElfAndProgramHeadersLoadsCorrectlyOrIsRejected) {
  int flips = 0;
  const SweepResult r = sweep_header_bit_flips(kernel_image(), load_and_run, false, &flips);
  EXPECT_TRUE(r.failures.empty()) << report(r);
  EXPECT_EQ(r.works + r.rejected, flips) << report(r);
  // Some flips are harmless (e_entry, p_paddr, ...): they must still load.
  EXPECT_GT(r.works, 0) << report(r);
}

// The orchestration objects link the C++ runtime (DT_NEEDED, symbol versions, PLT relocations):
// a loaded flip must resolve chiprt_orchestration to the same code as the unmodified object.
// Sampled (568 of 4,544 flips): each loaded one costs a dlopen of a 760 KB object, about 0.1 s
// under ASan; the kernel sweep above is exhaustive, and fuzz_object_loader goes further.
TEST(ObjectValidationTest, SampledHeaderBitFlipsOfAnOrchestrationObjectLoadCorrectlyOrAreRejected) {
  const std::vector<uint8_t> image = examples::read_chip_object("vector_example_orchestration");
  std::vector<uint8_t> code(64);
  {
    sim::ObjectLoader loader;
    uint64_t handle = 0, addr = 0;
    ASSERT_TRUE(loader.load(image, &handle).is_ok());
    ASSERT_TRUE(loader.resolve(handle, kOrchestrationSymbol, &addr).is_ok());
    std::memcpy(code.data(), reinterpret_cast<const void*>(addr), code.size());
    ASSERT_TRUE(loader.unload(handle).is_ok());
  }
  const auto same_code = [&](sim::ObjectLoader& loader, uint64_t handle) -> std::string {
    uint64_t addr = 0;
    const Status resolved = loader.resolve(handle, kOrchestrationSymbol, &addr);
    if (!resolved.is_ok()) return "loaded, but " + resolved.to_string();
    return std::memcmp(reinterpret_cast<const void*>(addr), code.data(), code.size()) == 0
               ? ""
               : "loaded, but chiprt_orchestration is not the object's code";
  };
  int flips = 0;
  const SweepResult r = sweep_header_bit_flips(
      image,
      [&](sim::ObjectLoader& loader, std::span<const uint8_t> input, std::string* why) {
        return load_and_check(loader, input, same_code, why);
      },
      true, &flips);
  EXPECT_TRUE(r.failures.empty()) << report(r);
  EXPECT_EQ(r.works + r.rejected, flips) << report(r);
  EXPECT_GT(r.works, 0) << report(r);
}

// `image` is rejected with `needle` in the message, and loading it (in a child) does not crash.
void expect_rejected_in_child(const std::vector<uint8_t>& image, const std::string& what,
                              const std::string& needle) {
  const SweepResult r = sweep_in_child(
      1, [&](int) { return image; }, [&](int) { return what; },
      [](sim::ObjectLoader& loader, std::span<const uint8_t> input, std::string* why) {
        return load_and_check(
            loader, input, [](sim::ObjectLoader&, uint64_t) { return std::string(); }, why);
      });
  EXPECT_TRUE(r.failures.empty()) << report(r);
  EXPECT_EQ(r.rejected, 1) << what << " was accepted";
  const Status s = sim::check_elf_object(image);
  EXPECT_EQ(s.code(), StatusCode::LoadFailed) << what;
  EXPECT_TRUE(contains(s, needle)) << "message '" << s.message() << "' lacks '" << needle << "'";
}

// Dynamic sections that lost an entry the loader depends on (the second found by
// fuzz_object_loader).
TEST(ObjectValidationTest, ADynamicSectionThatLostAnEntryIsRejected) {
  // Cut short (DT_NULL where DT_RELA was): a loadable object whose relocations are never
  // applied, so the loader would call .init_array's link-time address.
  std::vector<uint8_t> image = kernel_image();
  std::size_t entry = dynamic_entry(image, DT_RELA);
  ASSERT_NE(entry, 0u);
  write_at<int64_t>(image, entry + offsetof(Elf64_Dyn, d_tag), DT_NULL);
  expect_rejected_in_child(image, "DT_RELA made DT_NULL",
                           "(.rela.dyn): no dynamic entry describes this table");
  // Versions needed but no DT_VERSYM: the loader reads it unconditionally then.
  image = examples::read_chip_object("vector_example_orchestration");
  entry = dynamic_entry(image, DT_VERSYM);
  ASSERT_NE(entry, 0u);
  write_at<int64_t>(image, entry + offsetof(Elf64_Dyn, d_tag), 0x6fa4fff0);  // an unused tag
  expect_rejected_in_child(image, "DT_VERSYM made an unused tag", "there is no DT_VERSYM");
}

TEST(ObjectValidationTest, EveryChipObjectOfTheProjectPassesAndLoads) {
  // The objects that export kernels under symbols of their own; the others export kernel_entry,
  // or chiprt_orchestration when their name says so.
  const std::map<std::string, std::vector<const char*>> own_symbols = {
      {"paged_attention_kernels",
       {"paged_attention_qk", "paged_attention_softmax", "paged_attention_pv",
        "paged_attention_online_update", "paged_attention_normalize"}},
      {"chiprt_test_named_kernels",
       {"named_double", "named_add_one", "named_negate", kKernelSymbol, kOrchestrationSymbol}}};
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples::chip_object_dir())) {
    if (entry.path().extension() != ".so") continue;
    const std::string name = entry.path().stem().string();
    const std::vector<uint8_t> image = examples::read_chip_object(name);
    sim::ObjectLoader loader;
    uint64_t handle = 0, addr = 0;
    const Status loaded = loader.load(image, &handle);
    ASSERT_TRUE(loaded.is_ok()) << name << ": " << loaded.to_string();
    std::vector<const char*> symbols = {
        name.find("orchestration") != std::string::npos ? kOrchestrationSymbol : kKernelSymbol};
    if (auto own = own_symbols.find(name); own != own_symbols.end()) symbols = own->second;
    for (const char* symbol : symbols) {
      EXPECT_TRUE(loader.resolve(handle, symbol, &addr).is_ok()) << name << ": " << symbol;
    }
    EXPECT_TRUE(loader.unload(handle).is_ok()) << name;
    ++checked;
  }
  EXPECT_GE(checked, 11) << "the examples build 11 chip objects into "
                         << examples::chip_object_dir();
}

TEST(ObjectValidationTest, RejectionsNameTheStructureAndField) {
  const std::vector<uint8_t> good = kernel_image();
  auto expect_rejected = [](const std::vector<uint8_t>& image, const std::string& needle) {
    const Status s = load_status(image);
    EXPECT_EQ(s.code(), StatusCode::LoadFailed) << s.to_string();
    EXPECT_TRUE(contains(s, "-byte image is not a loadable shared object: ELF ")) << s.message();
    EXPECT_TRUE(contains(s, needle)) << "message '" << s.message() << "' lacks '" << needle << "'";
  };

  // Truncations: what the loader would have mapped past the end of the file (SIGBUS).
  std::size_t last_load = 0;
  uint64_t load_end = 0;
  for (std::size_t i = 0; i < read_at<Elf64_Ehdr>(good, 0).e_phnum; ++i) {
    const auto ph = read_at<Elf64_Phdr>(good, phdr_offset(good, i));
    if (ph.p_type == PT_LOAD) {
      last_load = i;
      load_end = ph.p_offset + ph.p_filesz;
    }
  }
  // Past every segment's file bytes (so the program headers pass) but short of the section
  // header table at the end of the file, whatever the object's layout.
  const std::size_t cut = std::max<std::size_t>(good.size() / 2, load_end);
  expect_rejected(std::vector<uint8_t>(good.begin(), good.begin() + cut),
                  "ends past the end of the " + std::to_string(cut) + "-byte object (truncated?)");
  expect_rejected(std::vector<uint8_t>(good.begin(), good.begin() + load_end - 1),
                  "ELF program header " + std::to_string(last_load) +
                      " (PT_LOAD): p_offset + p_filesz = " + std::to_string(load_end) +
                      " exceeds the object size " + std::to_string(load_end - 1));
  expect_rejected(std::vector<uint8_t>(good.begin(), good.begin() + 40),
                  "smaller than the 64-byte ELF header");

  // ELF header fields.
  auto b = good;
  b[EI_CLASS] = ELFCLASS32;
  expect_rejected(b, "ELF header: e_ident[EI_CLASS]=1 is not ELFCLASS64");
  b = good;
  write_at<uint16_t>(b, offsetof(Elf64_Ehdr, e_machine), EM_AARCH64);
  expect_rejected(b, "ELF header: e_machine=183 is not this host's machine");
  b = good;
  write_at<uint16_t>(b, offsetof(Elf64_Ehdr, e_type), ET_EXEC);
  expect_rejected(b, "e_type=2 is not ET_DYN");
  b = good;
  write_at<uint16_t>(b, offsetof(Elf64_Ehdr, e_phnum), PN_XNUM);
  expect_rejected(b, "PN_XNUM");

  // Program headers: byte 64 is the type of the first one (PT_LOAD, made PT_NULL here).
  b = good;
  b[64] ^= 1;
  expect_rejected(b, "lies in no PT_LOAD segment");
  b = good;
  write_at<uint64_t>(b, phdr_offset(b, 0) + offsetof(Elf64_Phdr, p_align), 0x1001);
  expect_rejected(b, "ELF program header 0 (PT_LOAD): p_align=0x1001 is not a power of two");
  b = good;
  const auto ph0 = read_at<Elf64_Phdr>(b, phdr_offset(b, 0));
  write_at<uint64_t>(b, phdr_offset(b, 0) + offsetof(Elf64_Phdr, p_filesz), ph0.p_memsz + 8);
  expect_rejected(b, "ELF program header 0 (PT_LOAD): p_filesz=");

  // The dynamic section: what glibc asserts on (the process would end with exit 127).
  const std::size_t relaent = dynamic_entry(good, DT_RELAENT);
  const std::size_t relacount = dynamic_entry(good, DT_RELACOUNT);
  ASSERT_NE(relaent, 0u);
  ASSERT_NE(relacount, 0u);
  b = good;
  write_at<uint64_t>(b, relaent + offsetof(Elf64_Dyn, d_un), 16);
  expect_rejected(b, "(DT_RELA): needs DT_RELAENT=24");
  b = good;
  write_at<uint64_t>(b, relacount + offsetof(Elf64_Dyn, d_un),
                     read_at<uint64_t>(b, relacount + offsetof(Elf64_Dyn, d_un)) + 1);
  expect_rejected(b, "DT_RELACOUNT=");
  const std::size_t gnu_hash = dynamic_entry(good, DT_GNU_HASH);
  ASSERT_NE(gnu_hash, 0u);
  b = good;
  const uint64_t hash_addr = read_at<uint64_t>(b, gnu_hash + offsetof(Elf64_Dyn, d_un));
  ASSERT_EQ(ph0.p_offset, ph0.p_vaddr) << "the hash table's file offset is taken as its address";
  write_at<uint32_t>(b, hash_addr + 8, 3);  // bloom_size
  expect_rejected(b, "power-of-two bloom filter");
}

}  // namespace
}  // namespace chiprt::platform
