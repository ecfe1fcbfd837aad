/*
 * host_id.h
 *		What identifies the host's CPU for cached machine code, read from
 *		the CPU itself rather than from LLVM (host_id.c).
 */
#ifndef SILVAN_HOST_ID_H
#define SILVAN_HOST_ID_H

#include <stdbool.h>

extern const char *HostIdentity(void);
extern const char *HostCpuDescription(void);
extern bool HostHasFeature(const char *name);

#endif							/* SILVAN_HOST_ID_H */
