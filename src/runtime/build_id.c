/*
 * build_id.c
 *		The GNU build ID of the binary that holds silvan's code.
 *
 * The code cache may find machine code by what it was compiled from (the
 * model, the schedule) without building its LLVM IR first; that is only
 * sound if the compiler that made the entry is this very build, whose
 * version string alone does not say.  The linker writes a build ID (a hash
 * of the linked output) into a PT_NOTE segment of every shared library
 * and executable it links with --build-id, Debian's default: this file
 * finds the object that holds BuildIdOfThisCode through dl_iterate_phdr
 * and reads its NT_GNU_BUILD_ID note.  An object without one gives "",
 * and callers then key nothing by source.
 */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "silvan/jit.h"

#define BUILD_ID_MAX_BYTES 64

typedef struct BuildIdSearch
{
	uintptr_t	address;		/* an address inside the object we look for */
	char		hex[2 * BUILD_ID_MAX_BYTES + 1];
} BuildIdSearch;

static pthread_once_t build_id_once = PTHREAD_ONCE_INIT;
static BuildIdSearch build_id;

/* Does one of the object's loaded segments hold address? */
static bool
ObjectHolds(const struct dl_phdr_info *info, uintptr_t address)
{
	for (int i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t	start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && address >= start && address - start < ph->p_memsz)
			return true;
	}
	return false;
}

/* Copy an NT_GNU_BUILD_ID note of a PT_NOTE segment as hex; false if none */
static bool
ReadBuildIdNote(const uint8_t *p, size_t size, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	while (size >= sizeof(ElfW(Nhdr)))
	{
		const ElfW(Nhdr) *note = (const ElfW(Nhdr) *) p;
		size_t		name_size = (note->n_namesz + 3) & ~(size_t) 3;
		size_t		desc_size = (note->n_descsz + 3) & ~(size_t) 3;
		size_t		total = sizeof(ElfW(Nhdr)) + name_size + desc_size;
		const uint8_t *name = p + sizeof(ElfW(Nhdr));

		if (total > size)
			return false;
		if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
			memcmp(name, "GNU", 4) == 0 && note->n_descsz > 0 &&
			note->n_descsz <= BUILD_ID_MAX_BYTES)
		{
			const uint8_t *desc = name + name_size;

			for (size_t i = 0; i < note->n_descsz; i++)
			{
				hex[2 * i] = digits[desc[i] >> 4];
				hex[2 * i + 1] = digits[desc[i] & 15];
			}
			hex[2 * note->n_descsz] = '\0';
			return true;
		}
		p += total;
		size -= total;
	}
	return false;
}

/* dl_iterate_phdr's callback: 1 (stop) at the object holding the address */
static int
VisitObject(struct dl_phdr_info *info, size_t size, void *arg)
{
	BuildIdSearch *search = arg;

	(void) size;
	if (!ObjectHolds(info, search->address))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_NOTE &&
			ReadBuildIdNote((const uint8_t *) (info->dlpi_addr + ph->p_vaddr),
							ph->p_memsz, search->hex))
			break;
	}
	return 1;
}

/* Find the build ID once per process */
static void
BuildIdFind(void)
{
	build_id.address = (uintptr_t) &BuildIdOfThisCode;
	build_id.hex[0] = '\0';
	(void) dl_iterate_phdr(VisitObject, &build_id);
}

/* The build ID of the binary holding this code, in hex; "" when it has none */
const char *
BuildIdOfThisCode(void)
{
	pthread_once(&build_id_once, BuildIdFind);
	return build_id.hex;
}
