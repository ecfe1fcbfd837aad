/*
 * elf_link.c
 *		Link the compiler's relocatable objects into executable memory.
 *
 * A backend that scores with a model whose machine code is in the disk
 * cache should not have to load LLVM to do it: libLLVM's dynamic linking
 * alone costs a fresh backend tens of milliseconds.  The cache holds what
 * LLVM's code generator emits, ELF relocatable objects, and this file does
 * for them what a JIT linker does, for the little they contain.  Sections
 * marked SHF_ALLOC are laid out in one anonymous mapping: code first, then
 * read-only data, then writable data, each class on pages of its own.
 * Symbols are resolved (defined in one of the objects, else the process's,
 * through dlsym), relocations applied, and then code pages are made read
 * and execute, read-only data read-only.  Unwind tables are not loaded:
 * the kernels neither throw nor are unwound through.
 *
 * The compiler emits for the large code model (LLVM's JIT default on
 * x86-64), where every address is an absolute 64-bit relocation, calls
 * between the halves of a split module included; so no stubs and no GOT
 * are needed.  32-bit relocations are applied when the value fits, which
 * it always does within the mapping, and refused otherwise.  Anything
 * else (another machine, TLS, GOT or REL relocations, common symbols,
 * constructors) is refused with a status; so is everything on a machine
 * other than x86-64 (ElfLinkSupported), where jit.c keeps LLVM's linker.
 *
 * Objects are bytes read back from disk: every offset, size, index and
 * count is checked against them before it is used, and the mapping is
 * sized from checked section sizes, at most ELF_LINK_MAX_BYTES.  Nothing
 * here includes postgres.h or raises.
 */
#include <dlfcn.h>
#include <elf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "silvan/elf_link.h"

/* The most a linked image may take: a compile's code is bounded far below */
#define ELF_LINK_MAX_BYTES		((uint64_t) 1 << 30)
#define ELF_LINK_MAX_ALIGN		4096

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND		0x70000001
#endif

/* The three kinds of loaded section, in the order of the mapping */
typedef enum ElfClass
{
	ELF_CODE = 0,
	ELF_RODATA,
	ELF_DATA,
	ELF_CLASSES
} ElfClass;

/* A symbol defined by one of the objects, visible to the others */
typedef struct ElfGlobal
{
	const char *name;			/* in its object's string table */
	uint8_t    *address;
} ElfGlobal;

struct ElfImage
{
	uint8_t    *base;			/* the mapping */
	size_t		size;
	int			global_count;
	ElfGlobal  *globals;
	char	   *names;			/* the globals' names */
};

/* One object while it is linked */
typedef struct ElfInput
{
	const uint8_t *bytes;
	size_t		len;
	Elf64_Ehdr	header;
	Elf64_Shdr *sections;		/* copies of the section headers */
	uint8_t   **placed;			/* where each loaded section went, or NULL */
	int			symtab;			/* its symbol table's section, or 0 */
	uint64_t	symbol_count;
	const char *strings;		/* the symbol table's string table */
	uint64_t	strings_len;
} ElfInput;

/* Whether this build links objects for the machine it runs on */
bool
ElfLinkSupported(void)
{
#if defined(__x86_64__) && defined(__linux__)
	return true;
#else
	return false;
#endif
}

/* Fail linking, naming the object */
static bool ElfRefuse(SilvanStatus *status, int object, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static bool
ElfRefuse(SilvanStatus *status, int object, const char *fmt,...)
{
	char		detail[SILVAN_DETAIL_LEN];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(detail, sizeof(detail), fmt, args);
	va_end(args);
	return StatusFail(status, SILVAN_ERROR_INVALID, "could not link generated code",
					  "Object %d: %s.", object + 1, detail);
}

/* Whether [offset, offset + size) lies within len bytes */
static bool
ElfWithin(uint64_t offset, uint64_t size, uint64_t len)
{
	return offset <= len && size <= len - offset;
}

/* The class a section is loaded as; -1 if it is not loaded */
static int
ElfSectionClass(const Elf64_Shdr *section)
{
	if (!(section->sh_flags & SHF_ALLOC) || section->sh_type == SHT_X86_64_UNWIND)
		return -1;
	if (section->sh_flags & SHF_EXECINSTR)
		return ELF_CODE;
	return (section->sh_flags & SHF_WRITE) ? ELF_DATA : ELF_RODATA;
}

/* Read and check an object's header, section headers and symbol table */
static bool
ElfReadInput(ElfInput *in, int object, SilvanStatus *status)
{
	const Elf64_Ehdr *h = &in->header;

	if (in->len < sizeof(Elf64_Ehdr))
		return ElfRefuse(status, object, "the object is %llu bytes", (unsigned long long) in->len);
	memcpy(&in->header, in->bytes, sizeof(Elf64_Ehdr));
	if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
		h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_type != ET_REL)
		return ElfRefuse(status, object, "it is not a 64-bit little-endian relocatable ELF object");
	if (h->e_machine != EM_X86_64)
		return ElfRefuse(status, object, "e_machine %llu is not x86-64", (unsigned long long) h->e_machine);
	if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 || h->e_shnum >= SHN_LORESERVE ||
		!ElfWithin(h->e_shoff, (uint64_t) h->e_shnum * sizeof(Elf64_Shdr), in->len))
		return ElfRefuse(status, object, "the section table of %llu entries lies outside the object", (unsigned long long) h->e_shnum);
	in->sections = malloc(h->e_shnum * sizeof(Elf64_Shdr));
	in->placed = calloc(h->e_shnum, sizeof(uint8_t *));
	if (in->sections == NULL || in->placed == NULL)
		return StatusNoMemory(status, "the linker's section table");
	memcpy(in->sections, in->bytes + h->e_shoff, h->e_shnum * sizeof(Elf64_Shdr));
	for (int s = 0; s < h->e_shnum; s++)
	{
		const Elf64_Shdr *section = &in->sections[s];
		uint64_t	align = section->sh_addralign;

		if (section->sh_type != SHT_NOBITS && section->sh_type != SHT_NULL &&
			!ElfWithin(section->sh_offset, section->sh_size, in->len))
			return ElfRefuse(status, object, "section %llu lies outside the object", (unsigned long long) s);
		if (section->sh_flags & SHF_TLS)
			return ElfRefuse(status, object, "section %llu holds thread-local data", (unsigned long long) s);
		if (ElfSectionClass(section) >= 0 &&
			((align & (align - 1)) != 0 || align > ELF_LINK_MAX_ALIGN || section->sh_size > ELF_LINK_MAX_BYTES ||
			 (section->sh_type != SHT_PROGBITS && section->sh_type != SHT_NOBITS)))
			return ElfRefuse(status, object, "section %llu cannot be loaded (its type, size or alignment)", (unsigned long long) s);
		if (section->sh_type == SHT_SYMTAB)
		{
			const Elf64_Shdr *strings;

			if (in->symtab != 0 || section->sh_entsize != sizeof(Elf64_Sym) ||
				section->sh_size % sizeof(Elf64_Sym) != 0 || section->sh_link >= h->e_shnum)
				return ElfRefuse(status, object, "section %llu is not a valid symbol table", (unsigned long long) s);
			strings = &in->sections[section->sh_link];
			if (strings->sh_type != SHT_STRTAB || strings->sh_size == 0 ||
				!ElfWithin(strings->sh_offset, strings->sh_size, in->len) ||
				in->bytes[strings->sh_offset + strings->sh_size - 1] != '\0')
				return ElfRefuse(status, object, "the string table of section %llu is not valid", (unsigned long long) s);
			in->symtab = s;
			in->symbol_count = section->sh_size / sizeof(Elf64_Sym);
			in->strings = (const char *) in->bytes + strings->sh_offset;
			in->strings_len = strings->sh_size;
		}
	}
	return true;
}

/* Symbol number i of an object, checked: its name is within the string table */
static bool
ElfSymbol(const ElfInput *in, uint64_t i, Elf64_Sym *symbol, int object, SilvanStatus *status)
{
	if (in->symtab == 0 || i >= in->symbol_count)
		return ElfRefuse(status, object, "symbol %llu does not exist", (unsigned long long) i);
	memcpy(symbol, in->bytes + in->sections[in->symtab].sh_offset + i * sizeof(Elf64_Sym),
		   sizeof(Elf64_Sym));
	if (symbol->st_name >= in->strings_len)
		return ElfRefuse(status, object, "symbol %llu has a name outside the string table", (unsigned long long) i);
	return true;
}

/* Round size up to a multiple of align (a power of two) */
static uint64_t
ElfAlignUp(uint64_t size, uint64_t align)
{
	return (size + align - 1) & ~(align - 1);
}

/*
 * Lay the loaded sections out, class by class, each class starting on a
 * page; offsets[class] gets where each class starts, offsets[ELF_CLASSES]
 * the total size; false and a status if over ELF_LINK_MAX_BYTES
 */
static bool
ElfLayout(ElfInput *inputs, int count, uint64_t *offsets, uint64_t *section_at,
		  SilvanStatus *status)
{
	uint64_t	page = (uint64_t) sysconf(_SC_PAGESIZE);
	uint64_t	at = 0;
	int			index = 0;

	for (int class = 0; class < ELF_CLASSES; class++)
	{
		at = ElfAlignUp(at, page);
		offsets[class] = at;
		index = 0;
		for (int k = 0; k < count; k++)
			for (int s = 0; s < inputs[k].header.e_shnum; s++, index++)
			{
				const Elf64_Shdr *section = &inputs[k].sections[s];

				if (ElfSectionClass(section) != class)
					continue;
				at = ElfAlignUp(at, section->sh_addralign ? section->sh_addralign : 1);
				section_at[index] = at;
				at += section->sh_size;
				if (at > ELF_LINK_MAX_BYTES)
					return ElfRefuse(status, k, "the objects' sections are more than %llu bytes",
									 (unsigned long long) ELF_LINK_MAX_BYTES);
			}
	}
	offsets[ELF_CLASSES] = ElfAlignUp(at, page);
	return true;
}

/* Copy each loaded section to its place in the mapping (NOBITS stay zero) */
static void
ElfPlace(ElfInput *inputs, int count, uint8_t *base, const uint64_t *section_at)
{
	int			index = 0;

	for (int k = 0; k < count; k++)
		for (int s = 0; s < inputs[k].header.e_shnum; s++, index++)
		{
			const Elf64_Shdr *section = &inputs[k].sections[s];

			if (ElfSectionClass(section) < 0)
				continue;
			inputs[k].placed[s] = base + section_at[index];
			if (section->sh_type == SHT_PROGBITS)
				memcpy(inputs[k].placed[s], inputs[k].bytes + section->sh_offset, section->sh_size);
		}
}

/* Collect the symbols the objects define for each other; a name defined twice is refused */
static bool
ElfCollectGlobals(ElfImage *image, ElfInput *inputs, int count, SilvanStatus *status)
{
	uint64_t	total = 0;

	for (int k = 0; k < count; k++)
		total += inputs[k].symbol_count;
	if ((image->globals = calloc(total ? total : 1, sizeof(ElfGlobal))) == NULL)
		return StatusNoMemory(status, "the linker's symbols");
	for (int k = 0; k < count; k++)
		for (uint64_t i = 1; i < inputs[k].symbol_count; i++)
		{
			Elf64_Sym	symbol;
			const char *name;

			if (!ElfSymbol(&inputs[k], i, &symbol, k, status))
				return false;
			if ((ELF64_ST_BIND(symbol.st_info) != STB_GLOBAL && ELF64_ST_BIND(symbol.st_info) != STB_WEAK) ||
				symbol.st_shndx == SHN_UNDEF)
				continue;
			if (symbol.st_shndx >= inputs[k].header.e_shnum || inputs[k].placed[symbol.st_shndx] == NULL ||
				symbol.st_value > inputs[k].sections[symbol.st_shndx].sh_size)
				return ElfRefuse(status, k, "symbol %llu is defined outside a loaded section", (unsigned long long) i);
			name = inputs[k].strings + symbol.st_name;
			for (int g = 0; g < image->global_count; g++)
				if (strcmp(image->globals[g].name, name) == 0)
					return ElfRefuse(status, k, "symbol %s is defined twice", name);
			image->globals[image->global_count].name = name;
			image->globals[image->global_count++].address =
				inputs[k].placed[symbol.st_shndx] + symbol.st_value;
		}
	return true;
}

/* The address symbol i of an object stands for; false and a status if it has none */
static bool
ElfResolve(const ElfImage *image, const ElfInput *in, uint64_t i, int object, uint64_t *value,
		   SilvanStatus *status)
{
	Elf64_Sym	symbol;
	const char *name;

	if (i == 0)
	{
		*value = 0;
		return true;
	}
	if (!ElfSymbol(in, i, &symbol, object, status))
		return false;
	if (symbol.st_shndx == SHN_ABS)
	{
		*value = symbol.st_value;
		return true;
	}
	if (symbol.st_shndx != SHN_UNDEF)
	{
		if (symbol.st_shndx >= in->header.e_shnum || in->placed[symbol.st_shndx] == NULL ||
			symbol.st_value > in->sections[symbol.st_shndx].sh_size)
			return ElfRefuse(status, object, "symbol %llu is defined outside a loaded section", (unsigned long long) i);
		*value = (uint64_t) (uintptr_t) (in->placed[symbol.st_shndx] + symbol.st_value);
		return true;
	}
	name = in->strings + symbol.st_name;
	for (int g = 0; g < image->global_count; g++)
		if (strcmp(image->globals[g].name, name) == 0)
		{
			*value = (uint64_t) (uintptr_t) image->globals[g].address;
			return true;
		}
	*value = (uint64_t) (uintptr_t) dlsym(RTLD_DEFAULT, name);
	if (*value == 0 && ELF64_ST_BIND(symbol.st_info) != STB_WEAK)
		return ElfRefuse(status, object, "symbol %s is not defined", name);
	return true;
}

/* Apply one relocation at place, of type, to value S + A (P is place) */
static bool
ElfApply(uint8_t *place, uint32_t type, uint64_t s_plus_a, int object, SilvanStatus *status)
{
	uint64_t	p = (uint64_t) (uintptr_t) place;
	int64_t		relative = (int64_t) (s_plus_a - p);
	uint32_t	word;

	switch (type)
	{
		case R_X86_64_NONE:
			return true;
		case R_X86_64_64:
			memcpy(place, &s_plus_a, 8);
			return true;
		case R_X86_64_PC64:
			memcpy(place, &relative, 8);
			return true;
		case R_X86_64_PC32:
		case R_X86_64_PLT32:
			if (relative != (int32_t) relative)
				return ElfRefuse(status, object, "a relocation of type %llu is out of range", (unsigned long long) type);
			word = (uint32_t) (int32_t) relative;
			break;
		case R_X86_64_32:
			if (s_plus_a != (uint32_t) s_plus_a)
				return ElfRefuse(status, object, "a relocation of type %llu is out of range", (unsigned long long) type);
			word = (uint32_t) s_plus_a;
			break;
		case R_X86_64_32S:
			if ((int64_t) s_plus_a != (int32_t) s_plus_a)
				return ElfRefuse(status, object, "a relocation of type %llu is out of range", (unsigned long long) type);
			word = (uint32_t) s_plus_a;
			break;
		default:
			return ElfRefuse(status, object, "a relocation of type %llu is not supported", (unsigned long long) type);
	}
	memcpy(place, &word, 4);
	return true;
}

/* Apply every relocation of the loaded sections of one object */
static bool
ElfRelocate(const ElfImage *image, ElfInput *in, int object, SilvanStatus *status)
{
	for (int s = 0; s < in->header.e_shnum; s++)
	{
		const Elf64_Shdr *rela = &in->sections[s];
		const Elf64_Shdr *target;

		if (rela->sh_type == SHT_REL)
			return ElfRefuse(status, object, "section %llu has relocations without addends", (unsigned long long) s);
		if (rela->sh_type != SHT_RELA)
			continue;
		if (rela->sh_info >= in->header.e_shnum)
			return ElfRefuse(status, object, "section %llu relocates no section", (unsigned long long) s);
		target = &in->sections[rela->sh_info];
		if (in->placed[rela->sh_info] == NULL)
			continue;			/* of a section not loaded (unwind tables) */
		if (rela->sh_link != (uint32_t) in->symtab || rela->sh_entsize != sizeof(Elf64_Rela) ||
			rela->sh_size % sizeof(Elf64_Rela) != 0 || target->sh_type != SHT_PROGBITS)
			return ElfRefuse(status, object, "section %llu is not a valid relocation table", (unsigned long long) s);
		for (uint64_t r = 0; r < rela->sh_size / sizeof(Elf64_Rela); r++)
		{
			Elf64_Rela	entry;
			uint64_t	value;
			uint32_t	type;

			memcpy(&entry, in->bytes + rela->sh_offset + r * sizeof(Elf64_Rela), sizeof(entry));
			type = ELF64_R_TYPE(entry.r_info);
			if (!ElfWithin(entry.r_offset, type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4,
						   target->sh_size))
				return ElfRefuse(status, object, "relocation %llu patches outside its section", (unsigned long long) r);
			if (!ElfResolve(image, in, ELF64_R_SYM(entry.r_info), object, &value, status) ||
				!ElfApply(in->placed[rela->sh_info] + entry.r_offset, type,
						  value + (uint64_t) entry.r_addend, object, status))
				return false;
		}
	}
	return true;
}

/* Keep the globals' names past the objects' lifetime */
static bool
ElfKeepNames(ElfImage *image, SilvanStatus *status)
{
	size_t		total = 0;
	char	   *at;

	for (int g = 0; g < image->global_count; g++)
		total += strlen(image->globals[g].name) + 1;
	if ((image->names = malloc(total ? total : 1)) == NULL)
		return StatusNoMemory(status, "the linker's symbol names");
	at = image->names;
	for (int g = 0; g < image->global_count; g++)
	{
		size_t		len = strlen(image->globals[g].name) + 1;

		memcpy(at, image->globals[g].name, len);
		image->globals[g].name = at;
		at += len;
	}
	return true;
}

/* Free an object's working copies */
static void
ElfInputFree(ElfInput *in)
{
	free(in->sections);
	free(in->placed);
}

/*
 * Link count objects into one image: defined symbols of each are visible
 * to the others, and the process's to all.  NULL and a status on failure.
 */
ElfImage *
ElfLink(const ElfObject *objects, int count, SilvanStatus *status)
{
	ElfInput   *inputs = calloc(count > 0 ? count : 1, sizeof(ElfInput));
	ElfImage   *image = calloc(1, sizeof(ElfImage));
	uint64_t	offsets[ELF_CLASSES + 1];
	uint64_t   *section_at = NULL;
	uint64_t	section_total = 0;
	bool		ok = inputs != NULL && image != NULL;

	if (!ok)
		StatusNoMemory(status, "the linker");
	else if (!ElfLinkSupported())
		ok = StatusFail(status, SILVAN_ERROR_UNSUPPORTED, "could not link generated code",
						"silvan links machine code itself only on x86-64 Linux.");
	for (int k = 0; ok && k < count; k++)
	{
		inputs[k].bytes = objects[k].bytes;
		inputs[k].len = objects[k].len;
		ok = ElfReadInput(&inputs[k], k, status);
		section_total += ok ? inputs[k].header.e_shnum : 0;
	}
	if (ok && (section_at = calloc(section_total ? section_total : 1, sizeof(uint64_t))) == NULL)
		ok = StatusNoMemory(status, "the linker's layout");
	if (ok && (ok = ElfLayout(inputs, count, offsets, section_at, status)))
		image->size = offsets[ELF_CLASSES];
	if (ok && image->size > 0)
	{
		image->base = mmap(NULL, image->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (image->base == MAP_FAILED)
		{
			image->base = NULL;
			ok = StatusNoMemory(status, "the linked code");
		}
	}
	if (ok)
	{
		ElfPlace(inputs, count, image->base, section_at);
		ok = ElfCollectGlobals(image, inputs, count, status);
	}
	for (int k = 0; ok && k < count; k++)
		ok = ElfRelocate(image, &inputs[k], k, status);
	ok = ok && ElfKeepNames(image, status);
	if (ok && offsets[ELF_RODATA] > offsets[ELF_CODE] &&
		mprotect(image->base + offsets[ELF_CODE], offsets[ELF_RODATA] - offsets[ELF_CODE],
				 PROT_READ | PROT_EXEC) != 0)
		ok = StatusFail(status, SILVAN_ERROR_INTERNAL, "could not link generated code",
						"The system refused to make the code executable.");
	if (ok && offsets[ELF_DATA] > offsets[ELF_RODATA])
		mprotect(image->base + offsets[ELF_RODATA], offsets[ELF_DATA] - offsets[ELF_RODATA], PROT_READ);
	for (int k = 0; inputs != NULL && k < count; k++)
		ElfInputFree(&inputs[k]);
	free(inputs);
	free(section_at);
	if (!ok)
	{
		ElfFree(image);
		return NULL;
	}
	return image;
}

/* The address of a symbol the objects define; NULL if none */
void *
ElfLookup(const ElfImage *image, const char *name)
{
	for (int g = 0; image != NULL && g < image->global_count; g++)
		if (strcmp(image->globals[g].name, name) == 0)
			return image->globals[g].address;
	return NULL;
}

/* The bytes the image maps */
size_t
ElfImageSize(const ElfImage *image)
{
	return image != NULL ? image->size : 0;
}

/* Unmap an image and free it */
void
ElfFree(ElfImage *image)
{
	if (image == NULL)
		return;
	if (image->base != NULL)
		munmap(image->base, image->size);
	free(image->globals);
	free(image->names);
	free(image);
}
