/*
 * host_probe.h
 *		Measure a host profile (host_profile.h) with short probes of this
 *		machine (host_probe.c).
 */
#ifndef SILVAN_HOST_PROBE_H
#define SILVAN_HOST_PROBE_H

#include <signal.h>

#include "silvan/forest.h"
#include "silvan/host_profile.h"
#include "silvan/status.h"

/* What measuring may take in all: choices past it keep the fallback's pick */
#define HOST_PROBE_BUDGET_MS	6000.0

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

/*
 * Race two compiles of one forest on num_rows rows (the forest's
 * precision, row-major) as a probe races its alternatives: interleaved
 * rounds on one thread until the spread is small or budget_ms is spent;
 * v gets the rounds, the medians and the pick (fallback within the
 * noise).  false and a status when stopped, when the two disagree on a
 * margin, or without memory.
 */
typedef struct CompiledForest CompiledForest;
extern bool HostRace(const Forest *forest, const void *rows, int64_t num_rows,
					 CompiledForest *const codes[2], double budget_ms,
					 volatile sig_atomic_t *stop, uint8_t fallback, HostChoiceValue *v,
					 SilvanStatus *status);

#endif							/* SILVAN_HOST_PROBE_H */
