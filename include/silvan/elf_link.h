/*
 * elf_link.h
 *		A small linker of the relocatable objects the compiler emits: turns
 *		them into callable machine code without LLVM (elf_link.c).
 */
#ifndef SILVAN_ELF_LINK_H
#define SILVAN_ELF_LINK_H

#include <stdbool.h>
#include <stddef.h>

#include "silvan/status.h"

/* One relocatable object's bytes */
typedef struct ElfObject
{
	const void *bytes;
	size_t		len;
} ElfObject;

/* Objects linked into executable memory */
typedef struct ElfImage ElfImage;

/* Whether this build can link objects for the machine it runs on */
extern bool ElfLinkSupported(void);
extern ElfImage *ElfLink(const ElfObject *objects, int count, SilvanStatus *status);
extern void *ElfLookup(const ElfImage *image, const char *name);
extern size_t ElfImageSize(const ElfImage *image);
extern void ElfFree(ElfImage *image);

#endif							/* SILVAN_ELF_LINK_H */
