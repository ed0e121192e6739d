// Implementation of elf_problem(): reads the ELF header, program headers and section headers
// with bounds checks against the file size. Only ELF64 little-endian for the host machine.
#include "plugin_host/elf_check.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace ablate {
namespace {

#if defined(__x86_64__)
constexpr Elf64_Half kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr Elf64_Half kHostMachine = EM_AARCH64;
#else
#error "elf_check: unsupported host architecture"
#endif

bool range_inside(std::uint64_t offset, std::uint64_t size, std::uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

}  // namespace

std::optional<std::string> elf_problem(const std::filesystem::path& file) {
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(file, ec);
  if (ec) return "cannot read file size: " + ec.message();
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::string("cannot open file for reading");
  std::vector<char> bytes(file_size);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(file_size))) return std::string("cannot read file");

  if (file_size < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return std::string("not an ELF file (no \\x7fELF magic): not a shared library");
  if (bytes[EI_CLASS] != ELFCLASS64 || bytes[EI_DATA] != ELFDATA2LSB) return std::string("ELF file is not 64-bit little-endian");
  if (file_size < sizeof(Elf64_Ehdr)) return "truncated ELF header (" + std::to_string(file_size) + " bytes)";

  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  if (eh.e_type != ET_DYN) return std::string("ELF file is not a shared object (e_type is not ET_DYN)");
  if (eh.e_machine != kHostMachine)
    return "ELF file is built for another architecture (e_machine " + std::to_string(eh.e_machine) + ")";

  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) return std::string("corrupt ELF program header table");
  if (!range_inside(eh.e_phoff, std::uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr), file_size))
    return "truncated or corrupt: program headers end past the end of the file (" + std::to_string(file_size) + " bytes)";
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof(Elf64_Phdr), sizeof ph);
    if (ph.p_filesz > ph.p_memsz && ph.p_type == PT_LOAD) return std::string("corrupt ELF segment sizes");
    if (!range_inside(ph.p_offset, ph.p_filesz, file_size))
      return "truncated or corrupt: segment " + std::to_string(i) + " ends past the end of the file (" +
             std::to_string(file_size) + " bytes)";
  }

  if (eh.e_shnum != 0) {
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) return std::string("corrupt ELF section header table");
    if (!range_inside(eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), file_size))
      return "truncated or corrupt: section headers end past the end of the file (" + std::to_string(file_size) + " bytes)";
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, bytes.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
      if (sh.sh_type != SHT_NOBITS && !range_inside(sh.sh_offset, sh.sh_size, file_size))
        return "truncated or corrupt: section " + std::to_string(i) + " ends past the end of the file";
    }
    if (eh.e_shstrndx >= eh.e_shnum) return std::string("corrupt ELF section name table index");
  }
  return std::nullopt;
}

}  // namespace ablate
