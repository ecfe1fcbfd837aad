/*
 * host_profile.h
 *		The choices of code generation that depend on the machine, as a
 *		value: measured on the host by short probes (host_probe.c), or the
 *		fallback, or made up by a test ("a Zen 4", "a Xeon").
 *
 * A compile receives one in its options (compiler.h, CompileOptions) and
 * asks nothing of the host itself; the default schedule and the tuner's
 * space read it too.  Each choice is one probe of host_profile.c's table:
 * two alternatives, the fallback's pick, the instruction set it needs.
 * The adapter measures a profile once per host (CPUID identity, LLVM and
 * silvan build), keeps it beside the code cache and shows it in the
 * silvan.host_profile view.
 *
 * Nothing here includes postgres.h or raises.
 */
#ifndef SILVAN_HOST_PROFILE_H
#define SILVAN_HOST_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

/* The choices a profile makes, one probe each */
typedef enum HostChoice
{
	HOST_CHOICE_CARRY = 0,		/* perfect layout's hop: compare-and-set or add-with-carry */
	HOST_CHOICE_KEYS,			/* perfect layout's compares: floats or integer keys */
	HOST_CHOICE_INTERLEAVE,		/* rows walked in lock-step: 8 or 16 */
	HOST_CHOICE_VECTOR_WALK,	/* default walks: lock-step or AVX-512 vectors */
	HOST_CHOICE_GATHER,			/* tile walks: scalar loads or gathers */
	HOST_CHOICE_CODE_WALK,		/* deep trees' code walks: branchy or select */
	HOST_NUM_CHOICES
} HostChoice;

/* How a choice was made */
typedef enum HostChoiceHow
{
	HOST_HOW_FALLBACK = 0,		/* not measured: the fallback's pick */
	HOST_HOW_MEASURED,			/* the faster alternative, clearly */
	HOST_HOW_TIE,				/* within the noise: the fallback's pick */
	HOST_HOW_UNAVAILABLE,		/* the CPU lacks what the second needs */
	HOST_HOW_SET				/* set by hand (a test, a SET) */
} HostChoiceHow;

/* One choice: which alternative (0 or 1), how, and what the probe timed */
typedef struct HostChoiceValue
{
	uint8_t		pick;			/* 0: the first alternative, 1: the second */
	uint8_t		how;			/* HostChoiceHow */
	int32_t		rounds;			/* interleaved rounds timed; 0: not timed */
	double		us_per_row[2];	/* medians of the two alternatives */
} HostChoiceValue;

#define HOST_PROFILE_CPU_LEN	96

typedef struct HostProfile
{
	char		cpu[HOST_PROFILE_CPU_LEN];	/* "AuthenticAMD family 26 model 2
											 * stepping 1", or a test's name */
	bool		sse2;			/* instruction sets code may use */
	bool		avx2;
	bool		avx512f;
	bool		measured;		/* the probes ran (else the fallback) */
	double		measure_ms;		/* what measuring took */
	HostChoiceValue choices[HOST_NUM_CHOICES];
} HostProfile;

/* What a choice is, for probes, text and the view */
typedef struct HostChoiceInfo
{
	const char *name;			/* "carry", as the view and text name it */
	const char *alternatives[2];	/* "compare", "add-with-carry" */
	uint8_t		fallback;		/* the pick without measuring */
	const char *needs;			/* the instruction set the second needs: "sse2",
								 * "avx2", "avx512f", or NULL */
} HostChoiceInfo;

extern const HostChoiceInfo *HostChoiceDescribe(HostChoice choice);

/*
 * The fallback profile of this host: its instruction sets (CPUID), every
 * choice the fallback's pick.  The compiler uses it when its options give
 * no profile.
 */
extern void HostProfileFallback(HostProfile *profile);

/* Set a choice by hand (tests, SET overrides); false if the CPU cannot take it */
extern bool HostProfileSet(HostProfile *profile, HostChoice choice, int pick);

/* The choices, as code generation and the default schedule ask them */
extern bool HostProfileGathers(const HostProfile *profile);
extern bool HostProfileCarryHops(const HostProfile *profile);
extern bool HostProfileKeyHops(const HostProfile *profile);
extern bool HostProfileVectorWalk(const HostProfile *profile);
extern int32_t HostProfileInterleave(const HostProfile *profile);
extern const char *HostProfileCodeWalkForm(const HostProfile *profile);

/* The choices on one line ("carry=0 interleave=16 ..."): part of cache keys */
extern void HostProfileKey(const HostProfile *profile, char *out, size_t size);

/*
 * The profile as text to store and read back (malloc'd, NULL without
 * memory); reading is strict: false on anything it did not write
 */
extern char *HostProfileToText(const HostProfile *profile);
extern bool HostProfileFromText(const char *text, size_t len, HostProfile *profile);

/* One choice in words for explain and the view: "add-with-carry (measured: ...)" */
extern void HostProfileDescribeChoice(const HostProfile *profile, HostChoice choice,
									  char *out, size_t size);
extern const char *HostChoiceHowName(HostChoiceHow how);

#endif							/* SILVAN_HOST_PROFILE_H */
