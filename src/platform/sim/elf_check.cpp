#include "platform/sim/elf_check.h"

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace chiprt::platform::sim {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr char kHostMachineName[] = "EM_X86_64";
constexpr uint32_t kRelativeType = R_X86_64_RELATIVE;
constexpr uint32_t kIrelativeType = R_X86_64_IRELATIVE;
constexpr uint32_t kCopyType = R_X86_64_COPY;
// Bytes the loader writes for a dynamic relocation type it applies on this machine; -1 for a type
// it does not apply (glibc's elf_machine_rela).
int relocation_width(uint32_t type) {
  switch (type) {
    case R_X86_64_NONE:
      return 0;
    case R_X86_64_32:
    case R_X86_64_PC32:
    case R_X86_64_SIZE32:
      return 4;
    case R_X86_64_64:
    case R_X86_64_COPY:
    case R_X86_64_GLOB_DAT:
    case R_X86_64_JUMP_SLOT:
    case R_X86_64_RELATIVE:
    case R_X86_64_DTPMOD64:
    case R_X86_64_DTPOFF64:
    case R_X86_64_TPOFF64:
    case R_X86_64_SIZE64:
    case R_X86_64_IRELATIVE:
      return 8;
    case R_X86_64_TLSDESC:
      return 16;
    default:
      return -1;
  }
}
bool is_tls_relocation(uint32_t type) {
  return type == R_X86_64_DTPMOD64 || type == R_X86_64_DTPOFF64 || type == R_X86_64_TPOFF64 ||
         type == R_X86_64_TLSDESC;
}
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr char kHostMachineName[] = "EM_AARCH64";
constexpr uint32_t kRelativeType = R_AARCH64_RELATIVE;
constexpr uint32_t kIrelativeType = R_AARCH64_IRELATIVE;
constexpr uint32_t kCopyType = R_AARCH64_COPY;
int relocation_width(uint32_t type) {
  switch (type) {
    case R_AARCH64_NONE:
      return 0;
    case R_AARCH64_ABS64:
    case R_AARCH64_COPY:
    case R_AARCH64_GLOB_DAT:
    case R_AARCH64_JUMP_SLOT:
    case R_AARCH64_RELATIVE:
    case R_AARCH64_TLS_DTPMOD:
    case R_AARCH64_TLS_DTPREL:
    case R_AARCH64_TLS_TPREL:
    case R_AARCH64_IRELATIVE:
      return 8;
    case R_AARCH64_TLSDESC:
      return 16;
    default:
      return -1;
  }
}
bool is_tls_relocation(uint32_t type) {
  return type == R_AARCH64_TLS_DTPMOD || type == R_AARCH64_TLS_DTPREL ||
         type == R_AARCH64_TLS_TPREL || type == R_AARCH64_TLSDESC;
}
#else
#error "elf_check: name this host's ELF machine and the dynamic relocation types its loader applies"
#endif

// glibc copies the program header table onto its stack (alloca) when it is not in the first
// block it read: a huge e_phnum would overflow that stack.
constexpr uint64_t kMaxProgramHeaders = 128;
constexpr uint64_t kMaxAlign = 1ull << 30;
constexpr uint64_t kMaxSpan = 4ull << 30;  // address space one chip object may reserve
constexpr uint64_t kMaxAddress = 1ull << 47;
// Every thread that touches the object's thread-locals allocates a block this size and alignment.
constexpr uint64_t kMaxTlsBytes = 64ull << 20;
constexpr uint64_t kMaxTlsAlign = 1ull << 16;

std::string dec(uint64_t v) {
  return std::to_string(v);
}
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
bool power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}
// [start, start + size) inside [0, limit), without overflow.
bool fits(uint64_t start, uint64_t size, uint64_t limit) {
  uint64_t end = 0;
  return !__builtin_add_overflow(start, size, &end) && end <= limit;
}

const char* segment_type_name(uint32_t type) {
  switch (type) {
    case PT_LOAD:
      return "PT_LOAD";
    case PT_DYNAMIC:
      return "PT_DYNAMIC";
    case PT_INTERP:
      return "PT_INTERP";
    case PT_NOTE:
      return "PT_NOTE";
    case PT_SHLIB:
      return "PT_SHLIB";
    case PT_PHDR:
      return "PT_PHDR";
    case PT_TLS:
      return "PT_TLS";
    case PT_GNU_EH_FRAME:
      return "PT_GNU_EH_FRAME";
    case PT_GNU_STACK:
      return "PT_GNU_STACK";
    case PT_GNU_RELRO:
      return "PT_GNU_RELRO";
    case PT_GNU_PROPERTY:
      return "PT_GNU_PROPERTY";
    default:
      return nullptr;
  }
}

// The dynamic tags the loader acts on, each checked below. Tags not listed are ignored by the
// loader for an object it dlopens, and so here.
struct DynTag {
  int64_t tag;
  const char* name;
  bool string;  // d_val is an offset into the dynamic string table; may repeat
};
constexpr DynTag kDynTags[] = {
    {DT_NEEDED, "DT_NEEDED", true},
    {DT_PLTRELSZ, "DT_PLTRELSZ", false},
    {DT_PLTGOT, "DT_PLTGOT", false},
    {DT_HASH, "DT_HASH", false},
    {DT_STRTAB, "DT_STRTAB", false},
    {DT_SYMTAB, "DT_SYMTAB", false},
    {DT_RELA, "DT_RELA", false},
    {DT_RELASZ, "DT_RELASZ", false},
    {DT_RELAENT, "DT_RELAENT", false},
    {DT_STRSZ, "DT_STRSZ", false},
    {DT_SYMENT, "DT_SYMENT", false},
    {DT_INIT, "DT_INIT", false},
    {DT_FINI, "DT_FINI", false},
    {DT_SONAME, "DT_SONAME", true},
    {DT_RPATH, "DT_RPATH", true},
    {DT_SYMBOLIC, "DT_SYMBOLIC", false},
    {DT_REL, "DT_REL", false},
    {DT_RELSZ, "DT_RELSZ", false},
    {DT_RELENT, "DT_RELENT", false},
    {DT_PLTREL, "DT_PLTREL", false},
    {DT_DEBUG, "DT_DEBUG", false},
    {DT_TEXTREL, "DT_TEXTREL", false},
    {DT_JMPREL, "DT_JMPREL", false},
    {DT_BIND_NOW, "DT_BIND_NOW", false},
    {DT_INIT_ARRAY, "DT_INIT_ARRAY", false},
    {DT_FINI_ARRAY, "DT_FINI_ARRAY", false},
    {DT_INIT_ARRAYSZ, "DT_INIT_ARRAYSZ", false},
    {DT_FINI_ARRAYSZ, "DT_FINI_ARRAYSZ", false},
    {DT_RUNPATH, "DT_RUNPATH", true},
    {DT_FLAGS, "DT_FLAGS", false},
    {DT_PREINIT_ARRAY, "DT_PREINIT_ARRAY", false},
    {DT_PREINIT_ARRAYSZ, "DT_PREINIT_ARRAYSZ", false},
    {DT_RELRSZ, "DT_RELRSZ", false},
    {DT_RELR, "DT_RELR", false},
    {DT_RELRENT, "DT_RELRENT", false},
    {DT_GNU_HASH, "DT_GNU_HASH", false},
    {DT_TLSDESC_PLT, "DT_TLSDESC_PLT", false},
    {DT_TLSDESC_GOT, "DT_TLSDESC_GOT", false},
    {DT_CONFIG, "DT_CONFIG", true},
    {DT_DEPAUDIT, "DT_DEPAUDIT", true},
    {DT_AUDIT, "DT_AUDIT", true},
    {DT_VERSYM, "DT_VERSYM", false},
    {DT_RELACOUNT, "DT_RELACOUNT", false},
    {DT_RELCOUNT, "DT_RELCOUNT", false},
    {DT_FLAGS_1, "DT_FLAGS_1", false},
    {DT_VERDEF, "DT_VERDEF", false},
    {DT_VERDEFNUM, "DT_VERDEFNUM", false},
    {DT_VERNEED, "DT_VERNEED", false},
    {DT_VERNEEDNUM, "DT_VERNEEDNUM", false},
    {DT_AUXILIARY, "DT_AUXILIARY", true},
    {DT_FILTER, "DT_FILTER", true},
};
constexpr std::size_t kDynTagCount = sizeof(kDynTags) / sizeof(kDynTags[0]);

int dyn_slot(int64_t tag) {
  for (std::size_t i = 0; i < kDynTagCount; ++i) {
    if (kDynTags[i].tag == tag) return static_cast<int>(i);
  }
  return -1;
}
const char* dyn_tag_name(int64_t tag) {
  const int slot = dyn_slot(tag);
  return slot < 0 ? "unknown tag" : kDynTags[slot].name;
}

struct Segment {
  std::size_t index = 0;  // in the program header table
  Elf64_Phdr ph{};
};
struct Section {
  std::size_t index = 0;
  Elf64_Shdr sh{};
  const char* name = "?";  // inside the image's (NUL-terminated) section name table
};
struct DynEntry {
  bool present = false;
  uint64_t value = 0;
  std::size_t entry = 0;  // index in the dynamic section
};
struct StringEntry {
  std::size_t entry;
  int64_t tag;
  uint64_t offset;
};

class Checker {
 public:
  explicit Checker(std::span<const uint8_t> image)
      : image_(image), page_(static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) {}

  Status run() {
    const bool ok = check_header() && check_program_headers() && check_load_layout() &&
                    check_section_headers() && check_sections_in_segments() && check_segments() &&
                    check_dynamic() && check_symbols() && check_hash_tables() && check_versions() &&
                    check_relocations();
    return ok ? Status::ok() : Status(StatusCode::LoadFailed, std::move(error_));
  }

 private:
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  template <class T>
  T at(uint64_t offset) const {  // the caller has checked that the bytes are inside the image
    T value;
    std::memcpy(&value, image_.data() + offset, sizeof(T));
    return value;
  }
  uint64_t size() const { return image_.size(); }
  uint64_t page_down(uint64_t v) const { return v & ~(page_ - 1); }
  uint64_t page_up(uint64_t v) const { return (v + page_ - 1) & ~(page_ - 1); }

  static std::string segment_where(const Segment& s) {
    const char* name = segment_type_name(s.ph.p_type);
    return "ELF program header " + dec(s.index) + " (" +
           (name != nullptr ? std::string(name) : "p_type " + hex(s.ph.p_type)) + "): ";
  }
  static std::string section_where(const Section& s) {
    return "ELF section " + dec(s.index) + " (" + s.name + "): ";
  }
  std::string dyn_where(int64_t tag) const {
    const int slot = dyn_slot(tag);
    const std::size_t entry = slot < 0 ? 0 : dyn_[slot].entry;
    return "ELF dynamic entry " + dec(entry) + " (" + dyn_tag_name(tag) + "): ";
  }
  const DynEntry& dyn(int64_t tag) const { return dyn_[dyn_slot(tag)]; }

  // The PT_LOAD whose memory holds [vaddr, vaddr + max(bytes, 1)).
  const Segment* load_holding(uint64_t vaddr, uint64_t bytes) const {
    const uint64_t n = std::max<uint64_t>(bytes, 1);
    for (const Segment& load : loads_) {
      if (vaddr >= load.ph.p_vaddr && fits(vaddr - load.ph.p_vaddr, n, load.ph.p_memsz)) {
        return &load;
      }
    }
    return nullptr;
  }
  // The file offset of [vaddr, vaddr + bytes) when a PT_LOAD maps it from the file.
  bool file_offset(uint64_t vaddr, uint64_t bytes, uint64_t* offset) const {
    for (const Segment& load : loads_) {
      if (vaddr >= load.ph.p_vaddr && fits(vaddr - load.ph.p_vaddr, bytes, load.ph.p_filesz)) {
        *offset = load.ph.p_offset + (vaddr - load.ph.p_vaddr);
        return true;
      }
    }
    return false;
  }
  const Segment* segment_of_type(uint32_t type) const {
    for (const Segment& s : segments_) {
      if (s.ph.p_type == type) return &s;
    }
    return nullptr;
  }
  // The allocated section of `type` (SHT_NULL: any) that starts at `addr`.
  const Section* section_at(uint64_t addr, uint32_t type) const {
    for (const Section& s : sections_) {
      if ((s.sh.sh_flags & SHF_ALLOC) != 0 && s.sh.sh_addr == addr && s.sh.sh_size != 0 &&
          (type == SHT_NULL || s.sh.sh_type == type)) {
        return &s;
      }
    }
    return nullptr;
  }
  const Section* section_named(const char* name) const {
    for (const Section& s : sections_) {
      if (std::strcmp(s.name, name) == 0) return &s;
    }
    return nullptr;
  }
  const Section* only_section_of_type(uint32_t type, const char* type_name, bool* ok) {
    const Section* found = nullptr;
    for (const Section& s : sections_) {
      if (s.sh.sh_type != type) continue;
      if (found != nullptr) {
        *ok = fail(section_where(s) + "a second " + type_name + " section (the first is section " +
                   dec(found->index) + ")");
        return nullptr;
      }
      found = &s;
    }
    *ok = true;
    return found;
  }

  bool check_header();
  bool check_program_headers();
  bool check_load_layout();
  bool check_section_headers();
  bool check_sections_in_segments();
  bool check_segments();
  bool check_mapped(const Segment& s);
  bool check_matches_section(const Segment* s, const Section* sec, const char* section_name);
  bool check_tls();
  bool check_relro(const Segment& relro);
  bool check_dynamic();
  bool check_table(int64_t addr_tag, int64_t size_tag, uint32_t section_type, uint64_t entry_size,
                   uint64_t* offset, uint64_t* count);
  bool check_function_address(int64_t tag);
  bool check_symbols();
  bool check_hash_tables();
  bool check_versions();
  bool check_relocations();
  bool check_rela_table(const char* table, uint64_t offset, uint64_t count, uint64_t relative);
  bool check_relocation_target(const std::string& where, uint64_t vaddr, uint64_t bytes);

  std::span<const uint8_t> image_;
  uint64_t page_;
  std::string error_;
  Elf64_Ehdr eh_{};
  std::vector<Segment> segments_;  // every program header but PT_NULL, in table order
  std::vector<Segment> loads_;     // the PT_LOADs, in table order (checked ascending)
  std::vector<Section> sections_;
  const Section* dynamic_section_ = nullptr;
  DynEntry dyn_[kDynTagCount];
  std::vector<StringEntry> strings_;
  uint64_t strtab_offset_ = 0;
  uint64_t strtab_size_ = 0;
  uint64_t symtab_offset_ = 0;
  uint64_t symbol_count_ = 0;
  bool text_relocations_ = false;
};

// ---- ELF header ------------------------------------------------------------------------------

bool Checker::check_header() {
  const std::string where = "ELF header: ";
  if (size() < sizeof(Elf64_Ehdr)) {
    return fail(where + "the object is " + dec(size()) +
                " bytes, smaller than the 64-byte ELF header (truncated, or not an ELF object)");
  }
  eh_ = at<Elf64_Ehdr>(0);
  const unsigned char* id = eh_.e_ident;
  if (std::memcmp(id, ELFMAG, SELFMAG) != 0) {
    return fail(where + "e_ident does not start with the ELF magic \\x7f E L F: not an ELF object");
  }
  if (id[EI_CLASS] != ELFCLASS64) {
    return fail(where + "e_ident[EI_CLASS]=" + dec(id[EI_CLASS]) +
                " is not ELFCLASS64 (2): build a 64-bit object");
  }
  if (id[EI_DATA] != ELFDATA2LSB) {
    return fail(where + "e_ident[EI_DATA]=" + dec(id[EI_DATA]) +
                " is not ELFDATA2LSB (1): this host is little-endian");
  }
  if (id[EI_VERSION] != EV_CURRENT) {
    return fail(where + "e_ident[EI_VERSION]=" + dec(id[EI_VERSION]) + " is not EV_CURRENT (1)");
  }
  if (id[EI_OSABI] != ELFOSABI_SYSV && id[EI_OSABI] != ELFOSABI_GNU) {
    return fail(where + "e_ident[EI_OSABI]=" + dec(id[EI_OSABI]) +
                " is neither ELFOSABI_SYSV (0) nor ELFOSABI_GNU (3)");
  }
  if (id[EI_OSABI] == ELFOSABI_SYSV && id[EI_ABIVERSION] != 0) {
    return fail(where + "e_ident[EI_ABIVERSION]=" + dec(id[EI_ABIVERSION]) +
                " must be 0 for ELFOSABI_SYSV");
  }
  for (int i = EI_PAD; i < EI_NIDENT; ++i) {
    if (id[i] != 0) {
      return fail(where + "e_ident[" + dec(i) + "]=" + dec(id[i]) + " is padding and must be 0");
    }
  }
  if (eh_.e_type != ET_DYN) {
    return fail(where + "e_type=" + dec(eh_.e_type) +
                " is not ET_DYN (3): a chip object must be a shared object (link with -shared)");
  }
  if (eh_.e_machine != kHostMachine) {
    return fail(where + "e_machine=" + dec(eh_.e_machine) + " is not this host's machine (" +
                dec(kHostMachine) + ", " + kHostMachineName + "): build the object for this host");
  }
  if (eh_.e_version != EV_CURRENT) {
    return fail(where + "e_version=" + dec(eh_.e_version) + " is not EV_CURRENT (1)");
  }
  if (eh_.e_ehsize != sizeof(Elf64_Ehdr)) {
    return fail(where + "e_ehsize=" + dec(eh_.e_ehsize) + " must be 64 (sizeof(Elf64_Ehdr))");
  }
  if (eh_.e_phentsize != sizeof(Elf64_Phdr)) {
    return fail(where + "e_phentsize=" + dec(eh_.e_phentsize) + " must be 56 (sizeof(Elf64_Phdr))");
  }
  if (eh_.e_phnum == 0) {
    return fail(where + "e_phnum=0: the object has no program headers, so nothing to map");
  }
  if (eh_.e_phnum == PN_XNUM) {
    return fail(where + "e_phnum=65535 (PN_XNUM, extended numbering) is not supported");
  }
  if (eh_.e_phnum > kMaxProgramHeaders) {
    return fail(where + "e_phnum=" + dec(eh_.e_phnum) + " exceeds " + dec(kMaxProgramHeaders) +
                " program headers");
  }
  if (eh_.e_phoff % 8 != 0) {
    return fail(where + "e_phoff=" + dec(eh_.e_phoff) + " is not 8-byte aligned");
  }
  const uint64_t table_bytes = uint64_t{eh_.e_phnum} * sizeof(Elf64_Phdr);
  if (!fits(eh_.e_phoff, table_bytes, size())) {
    return fail(where + "the program header table (e_phoff=" + dec(eh_.e_phoff) + ", " +
                dec(eh_.e_phnum) + " entries of 56 bytes) ends past the end of the " + dec(size()) +
                "-byte object (truncated?)");
  }
  return true;
}

// ---- program headers -------------------------------------------------------------------------

bool Checker::check_program_headers() {
  for (std::size_t i = 0; i < eh_.e_phnum; ++i) {
    Segment s{i, at<Elf64_Phdr>(eh_.e_phoff + i * sizeof(Elf64_Phdr))};
    const Elf64_Phdr& ph = s.ph;
    if (ph.p_type == PT_NULL) continue;
    const std::string where = segment_where(s);
    uint64_t end = 0;
    if (__builtin_add_overflow(ph.p_offset, ph.p_filesz, &end) || end > size()) {
      return fail(where + "p_offset + p_filesz = " +
                  (end < ph.p_offset ? std::string("(overflow)") : dec(end)) +
                  " exceeds the object size " + dec(size()) + " (truncated?)");
    }
    if (__builtin_add_overflow(ph.p_vaddr, ph.p_memsz, &end) || end > kMaxAddress) {
      return fail(where + "p_vaddr + p_memsz = " + hex(ph.p_vaddr) + " + " + hex(ph.p_memsz) +
                  " is beyond the address space (2^47)");
    }
    if (ph.p_align > 1 && !power_of_two(ph.p_align)) {
      return fail(where + "p_align=" + hex(ph.p_align) + " is not a power of two");
    }
    if (ph.p_align > kMaxAlign) {
      return fail(where + "p_align=" + hex(ph.p_align) + " exceeds 1 GiB");
    }
    switch (ph.p_type) {
      case PT_LOAD:
        if (ph.p_filesz > ph.p_memsz) {
          return fail(where + "p_filesz=" + hex(ph.p_filesz) +
                      " exceeds p_memsz=" + hex(ph.p_memsz));
        }
        if ((ph.p_flags & ~uint32_t{PF_R | PF_W | PF_X}) != 0) {
          return fail(where + "p_flags=" + hex(ph.p_flags) +
                      " has bits other than PF_R, PF_W and PF_X");
        }
        if ((ph.p_flags & PF_R) == 0) {
          return fail(where + "p_flags=" + hex(ph.p_flags) +
                      " lacks PF_R: a loadable segment must be readable");
        }
        if ((ph.p_vaddr - ph.p_offset) % page_ != 0) {
          return fail(where + "p_vaddr=" + hex(ph.p_vaddr) + " and p_offset=" + hex(ph.p_offset) +
                      " differ by a non-multiple of the page size (" + dec(page_) + ")");
        }
        if (ph.p_align > 1 && (ph.p_vaddr - ph.p_offset) % ph.p_align != 0) {
          return fail(where +
                      "p_offset % p_align != p_vaddr % p_align (p_offset=" + hex(ph.p_offset) +
                      ", p_vaddr=" + hex(ph.p_vaddr) + ", p_align=" + hex(ph.p_align) + ")");
        }
        loads_.push_back(s);
        break;
      case PT_SHLIB:
        return fail(where + "PT_SHLIB is reserved and has no defined meaning");
      case PT_GNU_STACK:
        if ((ph.p_flags & PF_X) != 0) {
          return fail(where + "p_flags=" + hex(ph.p_flags) +
                      " asks for an executable stack (PF_X), which a chip object must not need");
        }
        break;
      case PT_TLS:
        if (ph.p_filesz > ph.p_memsz) {
          return fail(where + "p_filesz=" + hex(ph.p_filesz) +
                      " exceeds p_memsz=" + hex(ph.p_memsz));
        }
        if (ph.p_memsz > kMaxTlsBytes || ph.p_align > kMaxTlsAlign) {
          return fail(where + "a thread-local block of " + dec(ph.p_memsz) + " bytes aligned to " +
                      dec(ph.p_align) + " exceeds the limits (64 MiB, 64 KiB alignment)");
        }
        break;
      default:
        break;
    }
    const bool single = ph.p_type == PT_DYNAMIC || ph.p_type == PT_INTERP || ph.p_type == PT_PHDR ||
                        ph.p_type == PT_TLS || ph.p_type == PT_GNU_EH_FRAME ||
                        ph.p_type == PT_GNU_STACK || ph.p_type == PT_GNU_RELRO ||
                        ph.p_type == PT_GNU_PROPERTY;
    if (const Segment* first = segment_of_type(ph.p_type); single && first != nullptr) {
      return fail(where + "a second " + segment_type_name(ph.p_type) +
                  " (the first is program header " + dec(first->index) + ")");
    }
    segments_.push_back(s);
  }
  if (loads_.empty()) return fail("ELF program headers: no PT_LOAD segment, so nothing to map");
  return true;
}

bool Checker::check_load_layout() {
  for (std::size_t k = 1; k < loads_.size(); ++k) {
    const Elf64_Phdr& prev = loads_[k - 1].ph;
    const Elf64_Phdr& cur = loads_[k].ph;
    const std::string where = segment_where(loads_[k]);
    if (cur.p_vaddr < prev.p_vaddr) {
      return fail(where + "p_vaddr=" + hex(cur.p_vaddr) + " is below p_vaddr=" + hex(prev.p_vaddr) +
                  " of program header " + dec(loads_[k - 1].index) +
                  ": loadable segments must ascend");
    }
    if (page_down(cur.p_vaddr) < page_up(prev.p_vaddr + prev.p_memsz)) {
      return fail(where + "its pages from " + hex(page_down(cur.p_vaddr)) +
                  " overlap those of program header " + dec(loads_[k - 1].index) +
                  " (PT_LOAD, up to " + hex(page_up(prev.p_vaddr + prev.p_memsz)) +
                  "): the loader would map one over the other");
    }
  }
  const Elf64_Phdr& first = loads_.front().ph;
  const Elf64_Phdr& last = loads_.back().ph;
  const uint64_t span = page_up(last.p_vaddr + last.p_memsz) - page_down(first.p_vaddr);
  if (span > kMaxSpan) {
    return fail("ELF program headers: the PT_LOAD segments span " + dec(span) +
                " bytes of address space, more than the 4 GiB one chip object may reserve");
  }
  return true;
}

// ---- section headers -------------------------------------------------------------------------

bool Checker::check_section_headers() {
  const std::string where = "ELF header: ";
  if (eh_.e_shnum == 0) {
    if (eh_.e_shoff != 0) {
      return fail(where + "e_shnum=0 with e_shoff=" + dec(eh_.e_shoff) +
                  " (extended section numbering) is not supported");
    }
    return fail(where +
                "e_shnum=0: the object has no section headers, which chiprt needs to cross-check "
                "its program headers (strip is fine; do not remove the section headers)");
  }
  if (eh_.e_shentsize != sizeof(Elf64_Shdr)) {
    return fail(where + "e_shentsize=" + dec(eh_.e_shentsize) + " must be 64 (sizeof(Elf64_Shdr))");
  }
  if (eh_.e_shoff % 8 != 0) {
    return fail(where + "e_shoff=" + dec(eh_.e_shoff) + " is not 8-byte aligned");
  }
  if (!fits(eh_.e_shoff, uint64_t{eh_.e_shnum} * sizeof(Elf64_Shdr), size())) {
    return fail(where + "the section header table (e_shoff=" + dec(eh_.e_shoff) + ", " +
                dec(eh_.e_shnum) + " entries of 64 bytes) ends past the end of the " + dec(size()) +
                "-byte object (truncated?)");
  }
  if (eh_.e_shstrndx == SHN_UNDEF || eh_.e_shstrndx >= eh_.e_shnum) {
    return fail(where + "e_shstrndx=" + dec(eh_.e_shstrndx) +
                " is not a section index (e_shnum=" + dec(eh_.e_shnum) + ")");
  }
  sections_.resize(eh_.e_shnum);
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    sections_[i].index = i;
    sections_[i].sh = at<Elf64_Shdr>(eh_.e_shoff + i * sizeof(Elf64_Shdr));
  }
  if (sections_[0].sh.sh_type != SHT_NULL) {
    return fail("ELF section 0: sh_type=" + dec(sections_[0].sh.sh_type) + " must be SHT_NULL");
  }
  const Elf64_Shdr& names = sections_[eh_.e_shstrndx].sh;
  const std::string names_where = "ELF section " + dec(eh_.e_shstrndx) + " (e_shstrndx): ";
  if (names.sh_type != SHT_STRTAB) {
    return fail(names_where + "sh_type=" + dec(names.sh_type) + " is not SHT_STRTAB");
  }
  if (names.sh_size == 0 || !fits(names.sh_offset, names.sh_size, size()) ||
      image_[names.sh_offset + names.sh_size - 1] != 0) {
    return fail(names_where + "the section name table (sh_offset=" + dec(names.sh_offset) +
                ", sh_size=" + dec(names.sh_size) +
                ") is outside the object or does not end with a NUL byte");
  }
  for (Section& s : sections_) {
    if (s.sh.sh_name < names.sh_size) {
      s.name = reinterpret_cast<const char*>(image_.data() + names.sh_offset + s.sh.sh_name);
    }
  }
  for (std::size_t i = 1; i < sections_.size(); ++i) {
    const Section& s = sections_[i];
    const std::string swhere = section_where(s);
    if (s.sh.sh_type != SHT_NOBITS && !fits(s.sh.sh_offset, s.sh.sh_size, size())) {
      return fail(swhere + "sh_offset + sh_size = " + dec(s.sh.sh_offset) + " + " +
                  dec(s.sh.sh_size) + " exceeds the object size " + dec(size()) + " (truncated?)");
    }
    if ((s.sh.sh_flags & SHF_ALLOC) != 0 && !fits(s.sh.sh_addr, s.sh.sh_size, kMaxAddress)) {
      return fail(swhere + "sh_addr + sh_size = " + hex(s.sh.sh_addr) + " + " + hex(s.sh.sh_size) +
                  " is beyond the address space");
    }
  }
  return true;
}

// Every allocated section must sit where its PT_LOAD maps it, with the permissions it needs: this
// is what catches a program header that was changed, lost or made up.
bool Checker::check_sections_in_segments() {
  for (const Section& s : sections_) {
    const Elf64_Shdr& sh = s.sh;
    if ((sh.sh_flags & SHF_ALLOC) == 0 || sh.sh_size == 0) continue;
    // .tbss takes no address space of its own; check_tls covers it.
    if (sh.sh_type == SHT_NOBITS && (sh.sh_flags & SHF_TLS) != 0) continue;
    const std::string where = section_where(s);
    const Segment* load = load_holding(sh.sh_addr, sh.sh_size);
    if (load == nullptr) {
      return fail(where + "[" + hex(sh.sh_addr) + ", " + hex(sh.sh_addr + sh.sh_size) +
                  ") lies in no PT_LOAD segment: the program headers do not map it");
    }
    const Elf64_Phdr& ph = load->ph;
    const std::string seg = "program header " + dec(load->index);
    if (sh.sh_type == SHT_NOBITS) {
      if (sh.sh_addr < ph.p_vaddr + ph.p_filesz) {
        return fail(where + "an SHT_NOBITS section at " + hex(sh.sh_addr) +
                    " lies in the file-backed part of " + seg + " (which ends at " +
                    hex(ph.p_vaddr + ph.p_filesz) + "): it would be filled from the file");
      }
    } else {
      if (!fits(sh.sh_addr - ph.p_vaddr, sh.sh_size, ph.p_filesz)) {
        return fail(where + "[" + hex(sh.sh_addr) + ", " + hex(sh.sh_addr + sh.sh_size) +
                    ") reaches past the file-backed part of " + seg + " (which ends at " +
                    hex(ph.p_vaddr + ph.p_filesz) + ")");
      }
      if (sh.sh_offset != ph.p_offset + (sh.sh_addr - ph.p_vaddr)) {
        return fail(where + "sh_offset=" + hex(sh.sh_offset) + " at sh_addr=" + hex(sh.sh_addr) +
                    ", but " + seg + " maps file offset " + hex(ph.p_offset) + " to " +
                    hex(ph.p_vaddr));
      }
    }
    if ((sh.sh_flags & SHF_EXECINSTR) != 0 && (ph.p_flags & PF_X) == 0) {
      return fail(where + "holds code, but " + seg + " lacks PF_X");
    }
    if ((sh.sh_flags & SHF_WRITE) != 0 && (ph.p_flags & PF_W) == 0) {
      return fail(where + "is writable data, but " + seg + " lacks PF_W");
    }
  }
  return true;
}

// ---- the other segments ----------------------------------------------------------------------

// A segment the loader reads through its load address: inside one PT_LOAD, file-backed where it
// has file bytes, at the file offset that PT_LOAD maps to its address.
bool Checker::check_mapped(const Segment& s) {
  const Elf64_Phdr& ph = s.ph;
  const std::string where = segment_where(s);
  const Segment* load = load_holding(ph.p_vaddr, ph.p_memsz);
  if (load == nullptr) {
    return fail(where + "[" + hex(ph.p_vaddr) + ", " + hex(ph.p_vaddr + ph.p_memsz) +
                ") lies in no PT_LOAD segment, but the loader reads it there");
  }
  if (ph.p_filesz > 0) {
    if (!fits(ph.p_vaddr - load->ph.p_vaddr, ph.p_filesz, load->ph.p_filesz)) {
      return fail(where + "its file bytes reach past the file-backed part of program header " +
                  dec(load->index));
    }
    if (ph.p_offset != load->ph.p_offset + (ph.p_vaddr - load->ph.p_vaddr)) {
      return fail(where + "p_offset=" + hex(ph.p_offset) + " at p_vaddr=" + hex(ph.p_vaddr) +
                  ", but program header " + dec(load->index) + " maps file offset " +
                  hex(load->ph.p_offset) + " to " + hex(load->ph.p_vaddr));
    }
  }
  return true;
}

// A segment that describes exactly one section (e.g. PT_GNU_EH_FRAME and .eh_frame_hdr): both
// present and equal, or both absent.
bool Checker::check_matches_section(const Segment* s, const Section* sec,
                                    const char* section_name) {
  if (sec != nullptr && (sec->sh.sh_flags & SHF_ALLOC) == 0) sec = nullptr;
  if (s == nullptr && sec == nullptr) return true;
  if (s == nullptr) {
    return fail(section_where(*sec) + "no program header describes it (a program header was " +
                "changed or lost)");
  }
  const std::string where = segment_where(*s);
  if (sec == nullptr) {
    return fail(where + "the object has no " + section_name + " section for it to describe");
  }
  if (s->ph.p_vaddr != sec->sh.sh_addr || s->ph.p_memsz != sec->sh.sh_size ||
      s->ph.p_filesz != sec->sh.sh_size || s->ph.p_offset != sec->sh.sh_offset) {
    return fail(where + "p_vaddr=" + hex(s->ph.p_vaddr) + ", p_offset=" + hex(s->ph.p_offset) +
                ", p_memsz=" + hex(s->ph.p_memsz) + " do not describe section " + dec(sec->index) +
                " (" + sec->name + " at " + hex(sec->sh.sh_addr) + ", offset " +
                hex(sec->sh.sh_offset) + ", " + hex(sec->sh.sh_size) + " bytes)");
  }
  return check_mapped(*s);
}

bool Checker::check_tls() {
  const Segment* tls = segment_of_type(PT_TLS);
  uint64_t start = UINT64_MAX, file_end = 0, end = 0, align = 1;
  const Section* first = nullptr;
  for (const Section& s : sections_) {
    if ((s.sh.sh_flags & SHF_TLS) == 0 || (s.sh.sh_flags & SHF_ALLOC) == 0) continue;
    if (first == nullptr) first = &s;
    start = std::min(start, s.sh.sh_addr);
    end = std::max(end, s.sh.sh_addr + s.sh.sh_size);
    if (s.sh.sh_type != SHT_NOBITS) file_end = std::max(file_end, s.sh.sh_addr + s.sh.sh_size);
    align = std::max<uint64_t>(align, s.sh.sh_addralign);
  }
  if (tls == nullptr) {
    if (first == nullptr) return true;
    return fail(section_where(*first) + "a thread-local section, but no PT_TLS describes it");
  }
  const std::string where = segment_where(*tls);
  const Elf64_Phdr& ph = tls->ph;
  if (first == nullptr) {
    return fail(where + "the object has no thread-local sections for it to describe");
  }
  if (file_end == 0) file_end = start;
  const uint64_t padded = (end - start + align - 1) / align * align;
  if (ph.p_vaddr != start || ph.p_vaddr + ph.p_filesz != file_end || ph.p_memsz < end - start ||
      ph.p_memsz > padded || std::max<uint64_t>(ph.p_align, 1) < align) {
    return fail(where + "p_vaddr=" + hex(ph.p_vaddr) + ", p_filesz=" + hex(ph.p_filesz) +
                ", p_memsz=" + hex(ph.p_memsz) + ", p_align=" + hex(ph.p_align) +
                " do not describe the thread-local sections ([" + hex(start) + ", " + hex(end) +
                "), initialised up to " + hex(file_end) + ", aligned to " + hex(align) + ")");
  }
  // The loader copies the initialisation image from the mapped file bytes.
  if (ph.p_filesz > 0) {
    const Segment* load = load_holding(ph.p_vaddr, ph.p_filesz);
    if (load == nullptr || !fits(ph.p_vaddr - load->ph.p_vaddr, ph.p_filesz, load->ph.p_filesz) ||
        ph.p_offset != load->ph.p_offset + (ph.p_vaddr - load->ph.p_vaddr)) {
      return fail(where + "its initialisation image [" + hex(ph.p_vaddr) + ", " +
                  hex(ph.p_vaddr + ph.p_filesz) + ") at p_offset=" + hex(ph.p_offset) +
                  " is not mapped from the file by a PT_LOAD");
    }
  }
  return true;
}

bool Checker::check_relro(const Segment& relro) {
  const std::string where = segment_where(relro);
  if (!check_mapped(relro)) return false;
  const Segment* load = load_holding(relro.ph.p_vaddr, relro.ph.p_memsz);
  if ((load->ph.p_flags & PF_W) == 0 || load->ph.p_vaddr != relro.ph.p_vaddr) {
    return fail(where + "p_vaddr=" + hex(relro.ph.p_vaddr) +
                " is not the start of a writable PT_LOAD (program header " + dec(load->index) +
                " starts at " + hex(load->ph.p_vaddr) + ")");
  }
  // After relocation the loader makes these whole pages read-only.
  const uint64_t lo = page_down(relro.ph.p_vaddr);
  const uint64_t hi = page_down(relro.ph.p_vaddr + relro.ph.p_memsz);
  for (const Section& s : sections_) {
    const Elf64_Shdr& sh = s.sh;
    if ((sh.sh_flags & (SHF_ALLOC | SHF_WRITE)) != (SHF_ALLOC | SHF_WRITE) || sh.sh_size == 0) {
      continue;
    }
    if (sh.sh_addr >= hi || sh.sh_addr + sh.sh_size <= lo) continue;
    // Linkers place the data written at run time (.data, .bss and the like) after the RELRO
    // part; a PT_GNU_RELRO that reaches over it was changed.
    const bool runtime_data =
        (sh.sh_type == SHT_NOBITS && (sh.sh_flags & SHF_TLS) == 0 &&
         std::strcmp(s.name, ".relro_padding") != 0) ||
        std::strcmp(s.name, ".data") == 0 || std::strcmp(s.name, ".sdata") == 0 ||
        std::strcmp(s.name, ".tm_clone_table") == 0 ||
        (std::strncmp(s.name, ".data.", 6) == 0 && std::strncmp(s.name, ".data.rel.ro", 12) != 0);
    if (runtime_data) {
      return fail(where + "it would make section " + dec(s.index) + " (" + s.name +
                  ") read-only after relocation, but that section is written at run time");
    }
  }
  return true;
}

bool Checker::check_segments() {
  bool ok = true;
  dynamic_section_ = only_section_of_type(SHT_DYNAMIC, "SHT_DYNAMIC", &ok);
  if (!ok) return false;
  const Segment* dynamic = segment_of_type(PT_DYNAMIC);
  if (dynamic == nullptr) {
    return fail("ELF program headers: no PT_DYNAMIC segment: not a dynamically loadable object");
  }
  if (!check_matches_section(dynamic, dynamic_section_, "SHT_DYNAMIC")) return false;
  const Segment* dyn_load = load_holding(dynamic->ph.p_vaddr, dynamic->ph.p_memsz);
  if ((dyn_load->ph.p_flags & PF_W) == 0) {
    return fail(segment_where(*dynamic) + "lies in program header " + dec(dyn_load->index) +
                ", which is not writable: the loader relocates the dynamic section in place");
  }
  if (dynamic->ph.p_memsz < sizeof(Elf64_Dyn) || dynamic->ph.p_memsz % sizeof(Elf64_Dyn) != 0) {
    return fail(segment_where(*dynamic) + "p_memsz=" + dec(dynamic->ph.p_memsz) +
                " is not a whole number of 16-byte entries");
  }
  if (!check_matches_section(segment_of_type(PT_GNU_EH_FRAME), section_named(".eh_frame_hdr"),
                             ".eh_frame_hdr") ||
      !check_matches_section(segment_of_type(PT_GNU_PROPERTY), section_named(".note.gnu.property"),
                             ".note.gnu.property") ||
      !check_tls()) {
    return false;
  }
  for (const Segment& s : segments_) {
    const std::string where = segment_where(s);
    switch (s.ph.p_type) {
      case PT_PHDR:
        if (s.ph.p_offset != eh_.e_phoff ||
            s.ph.p_filesz != uint64_t{eh_.e_phnum} * sizeof(Elf64_Phdr)) {
          return fail(where + "p_offset=" + dec(s.ph.p_offset) +
                      ", p_filesz=" + dec(s.ph.p_filesz) +
                      " do not describe the program header table (e_phoff=" + dec(eh_.e_phoff) +
                      ", " + dec(eh_.e_phnum) + " entries)");
        }
        if (!check_mapped(s)) return false;
        break;
      case PT_NOTE: {
        if (!check_mapped(s)) return false;
        bool starts = false, ends = false;
        for (const Section& sec : sections_) {
          if (sec.sh.sh_type != SHT_NOTE || (sec.sh.sh_flags & SHF_ALLOC) == 0) continue;
          starts = starts || sec.sh.sh_addr == s.ph.p_vaddr;
          ends = ends || sec.sh.sh_addr + sec.sh.sh_size == s.ph.p_vaddr + s.ph.p_memsz;
        }
        if (!starts || !ends) {
          return fail(where + "[" + hex(s.ph.p_vaddr) + ", " + hex(s.ph.p_vaddr + s.ph.p_memsz) +
                      ") does not start and end with note sections");
        }
        break;
      }
      case PT_GNU_RELRO:
        if (!check_relro(s)) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

// ---- dynamic section -------------------------------------------------------------------------

// A table named by an address tag and a size tag: both present or both absent, the size a whole
// number of entries, and [address, address + size) the file bytes of sections of `section_type`
// (it may span several adjacent ones, as DT_RELASZ may include .rela.plt).
bool Checker::check_table(int64_t addr_tag, int64_t size_tag, uint32_t section_type,
                          uint64_t entry_size, uint64_t* offset, uint64_t* count) {
  const DynEntry& addr = dyn(addr_tag);
  const DynEntry& bytes = dyn(size_tag);
  *count = 0;
  if (!addr.present && !bytes.present) return true;
  if (!addr.present || !bytes.present) {
    const int64_t missing = addr.present ? size_tag : addr_tag;
    const int64_t there = addr.present ? addr_tag : size_tag;
    return fail(dyn_where(there) + "has no matching " + dyn_tag_name(missing) +
                " entry; the loader needs both");
  }
  const std::string where = dyn_where(addr_tag);
  if (bytes.value % entry_size != 0) {
    return fail(dyn_where(size_tag) + "d_val=" + dec(bytes.value) + " is not a whole number of " +
                dec(entry_size) + "-byte entries");
  }
  if (bytes.value == 0) return true;
  if (!file_offset(addr.value, bytes.value, offset)) {
    return fail(where + "the table [" + hex(addr.value) + ", +" + dec(bytes.value) +
                " bytes) is not inside the file-backed part of a PT_LOAD");
  }
  bool starts = false, ends = false;
  for (const Section& s : sections_) {
    if (s.sh.sh_type != section_type || (s.sh.sh_flags & SHF_ALLOC) == 0) continue;
    starts = starts || s.sh.sh_addr == addr.value;
    ends = ends || s.sh.sh_addr + s.sh.sh_size == addr.value + bytes.value;
  }
  if (!starts || !ends) {
    return fail(where + "the table [" + hex(addr.value) + ", " + hex(addr.value + bytes.value) +
                ") (with " + dyn_tag_name(size_tag) + ") does not match the object's sections " +
                "of that kind");
  }
  *count = bytes.value / entry_size;
  return true;
}

// DT_INIT and DT_FINI are called by the loader: they must be where a function starts (the start
// of .init / .fini, or a function symbol; in an object stripped of .symtab, anywhere in code).
bool Checker::check_function_address(int64_t tag) {
  const DynEntry& e = dyn(tag);
  if (!e.present) return true;
  const Segment* load = load_holding(e.value, 1);
  if (load != nullptr && (load->ph.p_flags & PF_X) != 0) {
    bool stripped = true;
    for (const Section& s : sections_) {
      if ((s.sh.sh_flags & SHF_EXECINSTR) != 0 && s.sh.sh_addr == e.value) return true;
      stripped = stripped && s.sh.sh_type != SHT_SYMTAB;
    }
    for (const Section& s : sections_) {
      if (stripped && (s.sh.sh_flags & SHF_EXECINSTR) != 0 && e.value >= s.sh.sh_addr &&
          fits(e.value - s.sh.sh_addr, 1, s.sh.sh_size)) {
        return true;
      }
      if (s.sh.sh_type != SHT_SYMTAB && s.sh.sh_type != SHT_DYNSYM) continue;
      if (s.sh.sh_entsize != sizeof(Elf64_Sym)) continue;
      for (uint64_t i = 1; i < s.sh.sh_size / sizeof(Elf64_Sym); ++i) {
        const auto sym = at<Elf64_Sym>(s.sh.sh_offset + i * sizeof(Elf64_Sym));
        if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF &&
            sym.st_value == e.value) {
          return true;
        }
      }
    }
  }
  return fail(dyn_where(tag) + "d_ptr=" + hex(e.value) +
              " is not the start of a function in an executable segment; the loader calls it");
}

bool Checker::check_dynamic() {
  const Elf64_Shdr& sh = dynamic_section_->sh;
  const uint64_t entries = sh.sh_size / sizeof(Elf64_Dyn);
  bool terminated = false;
  for (uint64_t i = 0; i < entries; ++i) {
    const auto d = at<Elf64_Dyn>(sh.sh_offset + i * sizeof(Elf64_Dyn));
    if (d.d_tag == DT_NULL) {
      terminated = true;
      break;
    }
    const int slot = dyn_slot(d.d_tag);
    if (slot < 0) continue;  // ignored by the loader
    const uint64_t value = d.d_un.d_val;
    if (kDynTags[slot].string) {
      strings_.push_back(StringEntry{i, d.d_tag, value});
      dyn_[slot] = DynEntry{true, value, i};
      continue;
    }
    if (dyn_[slot].present) {
      return fail("ELF dynamic entry " + dec(i) + " (" + kDynTags[slot].name + "): a second " +
                  kDynTags[slot].name + " (the first is entry " + dec(dyn_[slot].entry) + ")");
    }
    dyn_[slot] = DynEntry{true, value, i};
  }
  if (!terminated) {
    return fail("ELF dynamic section: no DT_NULL among its " + dec(entries) +
                " entries; the loader would read past its end");
  }
  for (int64_t tag : {DT_STRTAB, DT_STRSZ, DT_SYMTAB, DT_SYMENT}) {
    if (!dyn(tag).present) {
      return fail(std::string("ELF dynamic section: no ") + dyn_tag_name(tag) +
                  " entry; the loader needs it");
    }
  }
  for (int64_t tag : {DT_REL, DT_RELSZ, DT_RELENT, DT_RELCOUNT}) {
    if (dyn(tag).present) {
      return fail(dyn_where(tag) + "this machine's objects use RELA relocations, not REL");
    }
  }

  // Symbols and strings: the tables the section headers name, and nothing else.
  bool ok = true;
  const Section* dynsym = only_section_of_type(SHT_DYNSYM, "SHT_DYNSYM", &ok);
  if (!ok) return false;
  if (dynsym == nullptr || (dynsym->sh.sh_flags & SHF_ALLOC) == 0) {
    return fail("ELF sections: no allocated SHT_DYNSYM section (the dynamic symbol table)");
  }
  if (dyn(DT_SYMTAB).value != dynsym->sh.sh_addr) {
    return fail(dyn_where(DT_SYMTAB) + "d_ptr=" + hex(dyn(DT_SYMTAB).value) +
                " is not the address of the dynamic symbol table (section " + dec(dynsym->index) +
                ", " + dynsym->name + ", at " + hex(dynsym->sh.sh_addr) + ")");
  }
  if (dyn(DT_SYMENT).value != sizeof(Elf64_Sym) || dynsym->sh.sh_entsize != sizeof(Elf64_Sym) ||
      dynsym->sh.sh_size % sizeof(Elf64_Sym) != 0) {
    return fail(dyn_where(DT_SYMENT) + "d_val=" + dec(dyn(DT_SYMENT).value) +
                " (section sh_entsize=" + dec(dynsym->sh.sh_entsize) + ", sh_size=" +
                dec(dynsym->sh.sh_size) + ") must describe 24-byte Elf64_Sym entries");
  }
  symtab_offset_ = dynsym->sh.sh_offset;
  symbol_count_ = dynsym->sh.sh_size / sizeof(Elf64_Sym);
  if (dynsym->sh.sh_link == 0 || dynsym->sh.sh_link >= sections_.size()) {
    return fail(section_where(*dynsym) + "sh_link=" + dec(dynsym->sh.sh_link) +
                " does not name its string table");
  }
  const Section& dynstr = sections_[dynsym->sh.sh_link];
  if (dynstr.sh.sh_type != SHT_STRTAB || (dynstr.sh.sh_flags & SHF_ALLOC) == 0 ||
      dynstr.sh.sh_size == 0) {
    return fail(section_where(dynstr) +
                "the dynamic symbols' string table is not an allocated, "
                "non-empty SHT_STRTAB");
  }
  if (dyn(DT_STRTAB).value != dynstr.sh.sh_addr || dyn(DT_STRSZ).value != dynstr.sh.sh_size) {
    return fail(dyn_where(DT_STRTAB) + "d_ptr=" + hex(dyn(DT_STRTAB).value) + " with DT_STRSZ=" +
                dec(dyn(DT_STRSZ).value) + " is not the dynamic string table (section " +
                dec(dynstr.index) + ", " + dynstr.name + ", at " + hex(dynstr.sh.sh_addr) + ", " +
                dec(dynstr.sh.sh_size) + " bytes)");
  }
  strtab_offset_ = dynstr.sh.sh_offset;
  strtab_size_ = dynstr.sh.sh_size;
  if (image_[strtab_offset_ + strtab_size_ - 1] != 0) {
    return fail(section_where(dynstr) + "the dynamic string table does not end with a NUL byte");
  }
  for (const StringEntry& s : strings_) {
    const std::string where =
        "ELF dynamic entry " + dec(s.entry) + " (" + dyn_tag_name(s.tag) + "): ";
    if (s.offset >= strtab_size_) {
      return fail(where + "d_val=" + dec(s.offset) + " is outside the dynamic string table (" +
                  dec(strtab_size_) + " bytes)");
    }
    if (s.tag == DT_NEEDED && image_[strtab_offset_ + s.offset] == 0) {
      return fail(where + "names an empty library name");
    }
  }

  // Relocation tables.
  if (dyn(DT_RELA).present &&
      (!dyn(DT_RELAENT).present || dyn(DT_RELAENT).value != sizeof(Elf64_Rela))) {
    return fail(dyn_where(DT_RELA) + "needs DT_RELAENT=24 (the loader asserts it), found " +
                (dyn(DT_RELAENT).present ? dec(dyn(DT_RELAENT).value) : std::string("none")));
  }
  const bool plt = dyn(DT_PLTREL).present || dyn(DT_JMPREL).present || dyn(DT_PLTRELSZ).present;
  if (plt && !(dyn(DT_PLTREL).present && dyn(DT_JMPREL).present && dyn(DT_PLTRELSZ).present)) {
    return fail(
        "ELF dynamic section: DT_PLTREL, DT_JMPREL and DT_PLTRELSZ must come together "
        "(the loader reads all three when it finds one)");
  }
  if (dyn(DT_PLTREL).present && dyn(DT_PLTREL).value != DT_RELA) {
    return fail(dyn_where(DT_PLTREL) + "d_val=" + dec(dyn(DT_PLTREL).value) +
                " is not DT_RELA (7); the loader asserts it");
  }
  if (dyn(DT_RELR).present &&
      (!dyn(DT_RELRENT).present || dyn(DT_RELRENT).value != sizeof(Elf64_Relr))) {
    return fail(dyn_where(DT_RELR) + "needs DT_RELRENT=8 (the loader asserts it)");
  }
  uint64_t offset = 0, count = 0;
  if (!check_table(DT_RELA, DT_RELASZ, SHT_RELA, sizeof(Elf64_Rela), &offset, &count) ||
      !check_table(DT_JMPREL, DT_PLTRELSZ, SHT_RELA, sizeof(Elf64_Rela), &offset, &count) ||
      !check_table(DT_RELR, DT_RELRSZ, SHT_RELR, sizeof(Elf64_Relr), &offset, &count) ||
      !check_table(DT_INIT_ARRAY, DT_INIT_ARRAYSZ, SHT_INIT_ARRAY, 8, &offset, &count) ||
      !check_table(DT_FINI_ARRAY, DT_FINI_ARRAYSZ, SHT_FINI_ARRAY, 8, &offset, &count) ||
      !check_table(DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, SHT_PREINIT_ARRAY, 8, &offset, &count)) {
    return false;
  }
  if (!check_function_address(DT_INIT) || !check_function_address(DT_FINI)) return false;
  // And the other way round: a table the sections list but the dynamic section lost would not be
  // applied (an unrelocated .init_array entry is a call to a link-time address).
  for (const Section& s : sections_) {
    if ((s.sh.sh_flags & SHF_ALLOC) == 0 || s.sh.sh_size == 0) continue;
    const auto covered = [&](int64_t addr_tag, int64_t size_tag) {
      return dyn(addr_tag).present && dyn(size_tag).present &&
             s.sh.sh_addr >= dyn(addr_tag).value &&
             s.sh.sh_addr + s.sh.sh_size <= dyn(addr_tag).value + dyn(size_tag).value;
    };
    const bool lost =
        (s.sh.sh_type == SHT_RELA && !covered(DT_RELA, DT_RELASZ) &&
         !covered(DT_JMPREL, DT_PLTRELSZ)) ||
        (s.sh.sh_type == SHT_RELR && !covered(DT_RELR, DT_RELRSZ)) ||
        (s.sh.sh_type == SHT_INIT_ARRAY && !covered(DT_INIT_ARRAY, DT_INIT_ARRAYSZ)) ||
        (s.sh.sh_type == SHT_FINI_ARRAY && !covered(DT_FINI_ARRAY, DT_FINI_ARRAYSZ)) ||
        (s.sh.sh_type == SHT_PREINIT_ARRAY && !covered(DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ));
    if (lost) {
      return fail(section_where(s) +
                  "no dynamic entry describes this table, so the loader "
                  "would not apply it");
    }
  }

  // Tables found by address alone must start their section.
  const struct {
    int64_t tag;
    uint32_t type;
  } starts[] = {{DT_HASH, SHT_HASH},
                {DT_GNU_HASH, SHT_GNU_HASH},
                {DT_VERSYM, SHT_GNU_versym},
                {DT_VERNEED, SHT_GNU_verneed},
                {DT_VERDEF, SHT_GNU_verdef}};
  for (const auto& t : starts) {
    if (dyn(t.tag).present && section_at(dyn(t.tag).value, t.type) == nullptr) {
      return fail(dyn_where(t.tag) + "d_ptr=" + hex(dyn(t.tag).value) +
                  " is not the address of a section of that kind");
    }
  }
  // The loader writes the three reserved words of the PLT GOT, and one TLS descriptor word.
  for (const auto& [tag, bytes] : {std::pair<int64_t, uint64_t>{DT_PLTGOT, 24},
                                   std::pair<int64_t, uint64_t>{DT_TLSDESC_GOT, 8}}) {
    const Segment* load = dyn(tag).present ? load_holding(dyn(tag).value, bytes) : nullptr;
    if (dyn(tag).present && (load == nullptr || (load->ph.p_flags & PF_W) == 0)) {
      return fail(dyn_where(tag) + "d_ptr=" + hex(dyn(tag).value) +
                  " is not in a writable PT_LOAD; the loader writes there");
    }
  }
  if (dyn(DT_TLSDESC_PLT).present) {
    const Segment* load = load_holding(dyn(DT_TLSDESC_PLT).value, 1);
    if (load == nullptr || (load->ph.p_flags & PF_X) == 0) {
      return fail(dyn_where(DT_TLSDESC_PLT) + "d_ptr=" + hex(dyn(DT_TLSDESC_PLT).value) +
                  " is not in an executable PT_LOAD");
    }
  }
  text_relocations_ =
      dyn(DT_TEXTREL).present || (dyn(DT_FLAGS).present && (dyn(DT_FLAGS).value & DF_TEXTREL) != 0);
  return true;
}

// ---- symbols, hash tables, versions ----------------------------------------------------------

bool Checker::check_symbols() {
  const Segment* tls = segment_of_type(PT_TLS);
  for (uint64_t i = 1; i < symbol_count_; ++i) {
    const auto sym = at<Elf64_Sym>(symtab_offset_ + i * sizeof(Elf64_Sym));
    const std::string where = "ELF dynamic symbol " + dec(i) + ": ";
    if (sym.st_name >= strtab_size_) {
      return fail(where + "st_name=" + dec(sym.st_name) + " is outside the dynamic string table (" +
                  dec(strtab_size_) + " bytes)");
    }
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS) continue;
    const std::string named =
        "ELF dynamic symbol " + dec(i) + " (" +
        reinterpret_cast<const char*>(image_.data() + strtab_offset_ + sym.st_name) + "): ";
    if (sym.st_shndx == SHN_COMMON || sym.st_shndx == SHN_XINDEX) {
      return fail(named + "st_shndx=" + hex(sym.st_shndx) + " has no place in a shared object");
    }
    const unsigned type = ELF64_ST_TYPE(sym.st_info);
    if (type == STT_TLS) {
      if (tls == nullptr || !fits(sym.st_value, sym.st_size, tls->ph.p_memsz)) {
        return fail(named + "a thread-local symbol outside the PT_TLS block");
      }
    } else if (type == STT_FUNC || type == STT_GNU_IFUNC) {
      // Called through dlsym, and an IFUNC resolver by the loader itself.
      const Segment* load = load_holding(sym.st_value, sym.st_size);
      if (load == nullptr || (load->ph.p_flags & PF_X) == 0) {
        return fail(named + "function at st_value=" + hex(sym.st_value) + " (" + dec(sym.st_size) +
                    " bytes) is not inside an executable PT_LOAD");
      }
    }
  }
  return true;
}

bool Checker::check_hash_tables() {
  if (dyn(DT_GNU_HASH).present) {
    const Section& s = *section_at(dyn(DT_GNU_HASH).value, SHT_GNU_HASH);
    const std::string where = "ELF GNU hash table (section " + dec(s.index) + "): ";
    const uint64_t bytes = s.sh.sh_size;
    if (bytes < 16) return fail(where + "smaller than its 16-byte header");
    const uint64_t o = s.sh.sh_offset;
    const uint32_t buckets = at<uint32_t>(o), symoffset = at<uint32_t>(o + 4);
    const uint32_t bloom = at<uint32_t>(o + 8);
    if (buckets == 0 || !power_of_two(bloom)) {
      return fail(where + "nbuckets=" + dec(buckets) + ", bloom_size=" + dec(bloom) +
                  ": needs at least one bucket and a power-of-two bloom filter (the loader "
                  "asserts it)");
    }
    if (symoffset > symbol_count_) {
      return fail(where + "symoffset=" + dec(symoffset) + " exceeds the " + dec(symbol_count_) +
                  " dynamic symbols");
    }
    const uint64_t hashed = symbol_count_ - symoffset;
    // The chains are read only from a non-empty bucket on, so only those must be in the section
    // (a linker may leave out the chains of a table whose buckets are all empty).
    const uint64_t need = 16 + uint64_t{bloom} * 8 + uint64_t{buckets} * 4;
    if (need > bytes) {
      return fail(where + "its bloom filter and " + dec(buckets) + " buckets need " + dec(need) +
                  " bytes; the section has " + dec(bytes));
    }
    const uint64_t bucket_at = o + 16 + uint64_t{bloom} * 8;
    const uint64_t chain_at = bucket_at + uint64_t{buckets} * 4;
    const uint64_t chains_in_section = (bytes - need) / 4;
    uint64_t steps = 0;
    for (uint32_t b = 0; b < buckets; ++b) {
      uint64_t index = at<uint32_t>(bucket_at + b * 4);
      if (index == 0) continue;
      if (index < symoffset || index >= symbol_count_) {
        return fail(where + "bucket " + dec(b) + " names symbol " + dec(index) +
                    ", outside the hashed symbols [" + dec(symoffset) + ", " + dec(symbol_count_) +
                    ")");
      }
      while (true) {
        if (index >= symbol_count_ || index - symoffset >= chains_in_section || ++steps > hashed) {
          return fail(where + "the chain of bucket " + dec(b) +
                      " runs past the last symbol, the section or into another chain");
        }
        if ((at<uint32_t>(chain_at + (index - symoffset) * 4) & 1) != 0) break;
        ++index;
      }
    }
  }
  if (dyn(DT_HASH).present) {
    const Section& s = *section_at(dyn(DT_HASH).value, SHT_HASH);
    const std::string where = "ELF hash table (section " + dec(s.index) + "): ";
    if (s.sh.sh_size < 8) return fail(where + "smaller than its 8-byte header");
    const uint64_t o = s.sh.sh_offset;
    const uint32_t buckets = at<uint32_t>(o), chains = at<uint32_t>(o + 4);
    if (buckets == 0 || chains != symbol_count_ ||
        (2 + uint64_t{buckets} + chains) * 4 > s.sh.sh_size) {
      return fail(where + "nbucket=" + dec(buckets) + ", nchain=" + dec(chains) +
                  " do not fit the section (" + dec(s.sh.sh_size) + " bytes) or the " +
                  dec(symbol_count_) + " dynamic symbols");
    }
    uint64_t steps = 0;
    for (uint32_t b = 0; b < buckets; ++b) {
      for (uint64_t index = at<uint32_t>(o + 8 + b * 4); index != STN_UNDEF;
           index = at<uint32_t>(o + 8 + (uint64_t{buckets} + index) * 4)) {
        if (index >= chains || ++steps > chains) {
          return fail(where + "the chain of bucket " + dec(b) +
                      " leaves the table or loops (the loader would never finish a lookup)");
        }
      }
    }
  }
  return true;
}

bool Checker::check_versions() {
  std::vector<std::string> needed;
  for (const StringEntry& s : strings_) {
    if (s.tag == DT_NEEDED) {
      needed.emplace_back(reinterpret_cast<const char*>(image_.data() + strtab_offset_ + s.offset));
    }
  }
  auto string_at = [&](uint64_t offset) {
    return reinterpret_cast<const char*>(image_.data() + strtab_offset_ + offset);
  };
  uint32_t highest = 0;  // the version index the loader sizes its version table by
  if (dyn(DT_VERNEED).present != dyn(DT_VERNEEDNUM).present ||
      dyn(DT_VERDEF).present != dyn(DT_VERDEFNUM).present) {
    return fail("ELF dynamic section: DT_VERNEED/DT_VERDEF and their DT_*NUM must come together");
  }
  if (dyn(DT_VERNEED).present) {
    const Section& s = *section_at(dyn(DT_VERNEED).value, SHT_GNU_verneed);
    const uint64_t base = s.sh.sh_offset, bytes = s.sh.sh_size;
    uint64_t at_entry = 0, records = 0;
    while (true) {
      const std::string where = "ELF version need record " + dec(records) + ": ";
      if (at_entry % 4 != 0 || !fits(at_entry, sizeof(Elf64_Verneed), bytes)) {
        return fail(where + "at offset " + dec(at_entry) + " is outside its section (" +
                    dec(bytes) + " bytes) or misaligned");
      }
      const auto vn = at<Elf64_Verneed>(base + at_entry);
      if (vn.vn_version != 1 || vn.vn_file >= strtab_size_) {
        return fail(where + "vn_version=" + dec(vn.vn_version) + ", vn_file=" + dec(vn.vn_file) +
                    ": needs version 1 and a name in the string table");
      }
      if (std::find(needed.begin(), needed.end(), string_at(vn.vn_file)) == needed.end()) {
        return fail(where + "names '" + std::string(string_at(vn.vn_file)) +
                    "', which is not one of the object's DT_NEEDED libraries (the loader "
                    "asserts it is)");
      }
      uint64_t aux = at_entry, auxes = 0;
      if (__builtin_add_overflow(aux, vn.vn_aux, &aux)) aux = UINT64_MAX;
      while (true) {
        if (aux % 4 != 0 || !fits(aux, sizeof(Elf64_Vernaux), bytes)) {
          return fail(where + "auxiliary entry " + dec(auxes) + " is outside its section");
        }
        const auto vna = at<Elf64_Vernaux>(base + aux);
        if (vna.vna_name >= strtab_size_) {
          return fail(where + "auxiliary entry " + dec(auxes) + ": vna_name=" + dec(vna.vna_name) +
                      " is outside the string table");
        }
        highest = std::max<uint32_t>(highest, vna.vna_other & 0x7fff);
        ++auxes;
        if (vna.vna_next == 0) break;
        aux += vna.vna_next;
      }
      if (auxes != vn.vn_cnt) {
        return fail(where + "vn_cnt=" + dec(vn.vn_cnt) + ", but its chain has " + dec(auxes) +
                    " entries");
      }
      ++records;
      if (vn.vn_next == 0) break;
      at_entry += vn.vn_next;
    }
    if (records != dyn(DT_VERNEEDNUM).value) {
      return fail(dyn_where(DT_VERNEEDNUM) + "d_val=" + dec(dyn(DT_VERNEEDNUM).value) +
                  ", but the chain has " + dec(records) + " records");
    }
  }
  if (dyn(DT_VERDEF).present) {
    const Section& s = *section_at(dyn(DT_VERDEF).value, SHT_GNU_verdef);
    const uint64_t base = s.sh.sh_offset, bytes = s.sh.sh_size;
    uint64_t at_entry = 0, records = 0;
    while (true) {
      const std::string where = "ELF version definition " + dec(records) + ": ";
      if (at_entry % 4 != 0 || !fits(at_entry, sizeof(Elf64_Verdef), bytes)) {
        return fail(where + "at offset " + dec(at_entry) + " is outside its section (" +
                    dec(bytes) + " bytes) or misaligned");
      }
      const auto vd = at<Elf64_Verdef>(base + at_entry);
      if (vd.vd_version != 1 || vd.vd_cnt == 0) {
        return fail(where + "vd_version=" + dec(vd.vd_version) + ", vd_cnt=" + dec(vd.vd_cnt) +
                    ": needs version 1 and at least one name");
      }
      highest = std::max<uint32_t>(highest, vd.vd_ndx & 0x7fff);
      uint64_t aux = at_entry;
      if (__builtin_add_overflow(aux, vd.vd_aux, &aux)) aux = UINT64_MAX;
      for (uint32_t k = 0; k < vd.vd_cnt; ++k) {
        if (aux % 4 != 0 || !fits(aux, sizeof(Elf64_Verdaux), bytes)) {
          return fail(where + "name " + dec(k) + " is outside its section");
        }
        const auto vda = at<Elf64_Verdaux>(base + aux);
        if (vda.vda_name >= strtab_size_) {
          return fail(where + "name " + dec(k) + ": vda_name=" + dec(vda.vda_name) +
                      " is outside the string table");
        }
        if (vda.vda_next == 0) break;
        aux += vda.vda_next;
      }
      ++records;
      if (vd.vd_next == 0) break;
      at_entry += vd.vd_next;
    }
    if (records != dyn(DT_VERDEFNUM).value) {
      return fail(dyn_where(DT_VERDEFNUM) + "d_val=" + dec(dyn(DT_VERDEFNUM).value) +
                  ", but the chain has " + dec(records) + " records");
    }
  }
  if (highest != 0 && !dyn(DT_VERSYM).present) {
    return fail(
        "ELF dynamic section: versions are needed or defined (DT_VERNEED/DT_VERDEF) but "
        "there is no DT_VERSYM; the loader reads it whenever there are versions");
  }
  if (dyn(DT_VERSYM).present) {
    const Section& s = *section_at(dyn(DT_VERSYM).value, SHT_GNU_versym);
    if (s.sh.sh_size != symbol_count_ * 2) {
      return fail(section_where(s) + "holds " + dec(s.sh.sh_size / 2) + " version indexes for " +
                  dec(symbol_count_) + " dynamic symbols");
    }
    if (highest == 0) {
      return fail(dyn_where(DT_VERSYM) +
                  "symbol versions without DT_VERNEED or DT_VERDEF to define them");
    }
    for (uint64_t i = 0; i < symbol_count_; ++i) {
      const uint32_t index = at<uint16_t>(s.sh.sh_offset + i * 2) & 0x7fff;
      if (index > highest) {
        return fail("ELF dynamic symbol " + dec(i) + ": version index " + dec(index) +
                    " exceeds the highest defined or needed version (" + dec(highest) + ")");
      }
    }
  }
  return true;
}

// ---- relocations -----------------------------------------------------------------------------

bool Checker::check_relocation_target(const std::string& where, uint64_t vaddr, uint64_t bytes) {
  const Segment* load = load_holding(vaddr, bytes);
  if (load == nullptr) {
    return fail(where + "the target [" + hex(vaddr) + ", +" + dec(bytes) +
                ") lies in no PT_LOAD segment");
  }
  if ((load->ph.p_flags & PF_W) == 0 && !text_relocations_) {
    return fail(where + "the target " + hex(vaddr) + " lies in program header " + dec(load->index) +
                ", which is not writable, and the object has no DT_TEXTREL");
  }
  return true;
}

bool Checker::check_rela_table(const char* table, uint64_t offset, uint64_t count,
                               uint64_t relative) {
  const bool has_tls = segment_of_type(PT_TLS) != nullptr;
  for (uint64_t i = 0; i < count; ++i) {
    const auto r = at<Elf64_Rela>(offset + i * sizeof(Elf64_Rela));
    const uint32_t type = ELF64_R_TYPE(r.r_info);
    const uint64_t symbol = ELF64_R_SYM(r.r_info);
    const std::string where = "ELF relocation " + dec(i) + " of " + table + " (type " + dec(type) +
                              ", r_offset " + hex(r.r_offset) + "): ";
    const int width = relocation_width(type);
    if (width < 0) {
      return fail(where + "not a relocation type the loader applies on this machine");
    }
    if (type == kCopyType) return fail(where + "a copy relocation has no place in a shared object");
    if (i < relative && type != kRelativeType) {
      return fail(where + "DT_RELACOUNT=" + dec(relative) +
                  " promises relative relocations first (the loader asserts it)");
    }
    if (symbol >= symbol_count_) {
      return fail(where + "symbol " + dec(symbol) + " is outside the " + dec(symbol_count_) +
                  " dynamic symbols");
    }
    if (width > 0 && !check_relocation_target(where, r.r_offset, static_cast<uint64_t>(width))) {
      return false;
    }
    if (type == kIrelativeType) {
      const uint64_t resolver = static_cast<uint64_t>(r.r_addend);
      const Segment* load = load_holding(resolver, 1);
      if (load == nullptr || (load->ph.p_flags & PF_X) == 0) {
        return fail(where + "the IFUNC resolver at " + hex(resolver) +
                    " is not in an executable PT_LOAD; the loader calls it");
      }
    }
    if (is_tls_relocation(type) && symbol == 0 && !has_tls) {
      return fail(where +
                  "a thread-local relocation of the object's own block, but the object "
                  "has no PT_TLS");
    }
  }
  return true;
}

bool Checker::check_relocations() {
  uint64_t offset = 0, count = 0;
  if (dyn(DT_RELA).present &&
      check_table(DT_RELA, DT_RELASZ, SHT_RELA, sizeof(Elf64_Rela), &offset, &count)) {
    const uint64_t relative = dyn(DT_RELACOUNT).present ? dyn(DT_RELACOUNT).value : 0;
    if (relative > count) {
      return fail(dyn_where(DT_RELACOUNT) + "d_val=" + dec(relative) + " exceeds the " +
                  dec(count) + " entries of DT_RELA");
    }
    if (!check_rela_table("DT_RELA", offset, count, relative)) return false;
  } else if (dyn(DT_RELACOUNT).present && dyn(DT_RELACOUNT).value != 0) {
    return fail(dyn_where(DT_RELACOUNT) + "counts relative relocations, but there is no DT_RELA");
  }
  if (dyn(DT_JMPREL).present) {
    (void)check_table(DT_JMPREL, DT_PLTRELSZ, SHT_RELA, sizeof(Elf64_Rela), &offset, &count);
    if (!check_rela_table("DT_JMPREL", offset, count, 0)) return false;
  }
  if (dyn(DT_RELR).present) {
    (void)check_table(DT_RELR, DT_RELRSZ, SHT_RELR, sizeof(Elf64_Relr), &offset, &count);
    // An even entry is an address; an odd one a bitmap of the 63 words after the last address.
    uint64_t next = 0;
    for (uint64_t i = 0; i < count; ++i) {
      const auto entry = at<Elf64_Relr>(offset + i * sizeof(Elf64_Relr));
      const std::string where = "ELF relative relocation entry " + dec(i) + " of DT_RELR: ";
      if ((entry & 1) == 0) {
        if (!check_relocation_target(where, entry, 8)) return false;
        next = entry + 8;
        continue;
      }
      for (uint64_t bit = 1; bit < 64; ++bit) {
        if (((entry >> bit) & 1) != 0 && !check_relocation_target(where, next + (bit - 1) * 8, 8)) {
          return false;
        }
      }
      if (__builtin_add_overflow(next, 63 * 8, &next)) {
        return fail(where + "the bitmap runs past the end of the address space");
      }
    }
  }
  return true;
}

}  // namespace

Status check_elf_object(std::span<const uint8_t> image) {
  return Checker(image).run();
}

}  // namespace chiprt::platform::sim
