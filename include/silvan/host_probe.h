/*
 * host_probe.h
 *		Measure a host profile (host_profile.h) with short probes of this
 *		machine (host_probe.c).
 */
#ifndef SILVAN_HOST_PROBE_H
#define SILVAN_HOST_PROBE_H

#include <signal.h>

#include "silvan/host_profile.h"
#include "silvan/status.h"

/* What measuring may take in all: choices past it keep the fallback's pick */
#define HOST_PROBE_BUDGET_MS	4000.0

/*
 * Measure this host's profile: each choice's two alternatives compiled on
 * a synthetic forest and timed in interleaved rounds on one thread.
 * false and a status when stopped (CancelRequested, or *stop nonzero; stop
 * may be NULL) or
 * when a probe cannot be compiled; profile then holds the fallback.
 * Loads LLVM if need be; runs on the caller's thread, parallel loops
 * serial.
 */
extern bool HostProfileMeasure(HostProfile *profile, double budget_ms,
							   volatile sig_atomic_t *stop, SilvanStatus *status);

#endif							/* SILVAN_HOST_PROBE_H */
