/*
 * host_profile.c
 *		The choices of code generation that depend on the machine, as a
 *		value (host_profile.h): the table of choices, the fallback, the
 *		text a profile is stored as.
 *
 * Each choice has two alternatives.  The first is the plain one that any
 * x86-64 CPU runs well enough; the second needs an instruction set (the
 * table's `needs`) and is taken when the probes (host_probe.c) measured it
 * clearly faster on this host.  The fallback, for a host not measured (or
 * silvan.host_profile = fallback), takes the first everywhere but the
 * interleave, where 16 rows in lock-step walked faster than 8 on every
 * host measured.  No choice names a CPU: a new core gets what its own
 * probes find.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/host_id.h"
#include "silvan/host_profile.h"
#include "silvan/text.h"

#define HOST_PROFILE_TEXT_VERSION	2

static const HostChoiceInfo host_choices[HOST_NUM_CHOICES] = {
	[HOST_CHOICE_CARRY] = {"carry", {"compare", "add-with-carry"}, 0, "sse2"},
	[HOST_CHOICE_KEYS] = {"keys", {"floats", "integer keys"}, 0, "sse2"},
	[HOST_CHOICE_INTERLEAVE] = {"interleave", {"8 rows", "16 rows"}, 1, NULL},
	[HOST_CHOICE_VECTOR_WALK] = {"vector_walk", {"lock-step", "avx-512 vectors"}, 0, "avx512f"},
	[HOST_CHOICE_GATHER] = {"gather", {"loads", "gathers"}, 0, "avx2"},
	[HOST_CHOICE_CODE_WALK] = {"code_walk", {"branchy", "select"}, 0, NULL},
};

static const char *const how_names[] = {
	[HOST_HOW_FALLBACK] = "fallback",
	[HOST_HOW_MEASURED] = "measured",
	[HOST_HOW_TIE] = "tie",
	[HOST_HOW_UNAVAILABLE] = "unavailable",
	[HOST_HOW_SET] = "set",
};

/* The table entry of a choice */
const HostChoiceInfo *
HostChoiceDescribe(HostChoice choice)
{
	return &host_choices[choice];
}

/* The word for how a choice was made */
const char *
HostChoiceHowName(HostChoiceHow how)
{
	return how <= HOST_HOW_SET ? how_names[how] : "unknown";
}

/* Has the profile's CPU what the second alternative of a choice needs? */
static bool
HostProfileCan(const HostProfile *profile, HostChoice choice)
{
	const char *needs = host_choices[choice].needs;

	if (needs == NULL)
		return true;
	if (strcmp(needs, "sse2") == 0)
		return profile->sse2;
	if (strcmp(needs, "avx2") == 0)
		return profile->avx2 || profile->avx512f;
	return strcmp(needs, "avx512f") == 0 && profile->avx512f;
}

/* See host_profile.h */
void
HostProfileFallback(HostProfile *profile)
{
	memset(profile, 0, sizeof(HostProfile));
	snprintf(profile->cpu, sizeof(profile->cpu), "%s", HostCpuDescription());
	profile->sse2 = HostHasFeature("sse2");
	profile->avx2 = HostHasFeature("avx2");
	profile->avx512f = HostHasFeature("avx512f");
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
	{
		profile->choices[c].pick = host_choices[c].fallback;
		profile->choices[c].how = HostProfileCan(profile, c) || host_choices[c].fallback == 0 ?
			HOST_HOW_FALLBACK : HOST_HOW_UNAVAILABLE;
		if (!HostProfileCan(profile, c))
			profile->choices[c].pick = 0;
	}
}

/* See host_profile.h */
bool
HostProfileSet(HostProfile *profile, HostChoice choice, int pick)
{
	if (pick != 0 && !HostProfileCan(profile, choice))
		return false;
	profile->choices[choice].pick = pick != 0;
	profile->choices[choice].how = HOST_HOW_SET;
	return true;
}

/* The pick of a choice, never one the CPU cannot run */
static bool
Picks(const HostProfile *profile, HostChoice choice)
{
	return profile->choices[choice].pick == 1 && HostProfileCan(profile, choice);
}

/* Do tile walks gather (AVX2 or AVX-512 gathers) instead of scalar loads? */
bool
HostProfileGathers(const HostProfile *profile)
{
	return Picks(profile, HOST_CHOICE_GATHER);
}

/* Is a perfect layout's hop one add-with-carry (vucomiss, adc) instead of xor, setb, lea? */
bool
HostProfileCarryHops(const HostProfile *profile)
{
	return Picks(profile, HOST_CHOICE_CARRY);
}

/*
 * Do a perfect layout's hops compare integer keys of the rows' values
 * (repr_keys.c), each hop one add-with-carry, whatever the carry choice?
 */
bool
HostProfileKeyHops(const HostProfile *profile)
{
	return Picks(profile, HOST_CHOICE_KEYS);
}

/* Do default schedules walk rows as the lanes of AVX-512 vectors (vectorWalk)? */
bool
HostProfileVectorWalk(const HostProfile *profile)
{
	return Picks(profile, HOST_CHOICE_VECTOR_WALK);
}

/* Rows a default schedule walks in lock-step (numeric forests) */
int32_t
HostProfileInterleave(const HostProfile *profile)
{
	return Picks(profile, HOST_CHOICE_INTERLEAVE) ? 16 : 8;
}

/* The form of deep trees' default code walks: "branchy" or "select" */
const char *
HostProfileCodeWalkForm(const HostProfile *profile)
{
	return Picks(profile, HOST_CHOICE_CODE_WALK) ? "select" : "branchy";
}

/* See host_profile.h: what of a profile changes code, on one line */
void
HostProfileKey(const HostProfile *profile, char *out, size_t size)
{
	size_t		len = 0;

	out[0] = '\0';
	for (int c = 0; c < HOST_NUM_CHOICES && len < size; c++)
		len += snprintf(out + len, size - len, "%s%s=%d", c > 0 ? " " : "",
						host_choices[c].name, Picks(profile, c) ? 1 : 0);
}

/* See host_profile.h */
char *
HostProfileToText(const HostProfile *profile)
{
	TextBuf		buf = {0};

	TextAppend(&buf, "silvan host profile %d\ncpu %s\nsets %d %d %d\nmeasured %d %.17g\n",
			   HOST_PROFILE_TEXT_VERSION, profile->cpu, profile->sse2, profile->avx2,
			   profile->avx512f, profile->measured, profile->measure_ms);
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
	{
		const HostChoiceValue *v = &profile->choices[c];

		TextAppend(&buf, "choice %s %d %d %d %.17g %.17g\n", host_choices[c].name, v->pick,
				   v->how, v->rounds, v->us_per_row[0], v->us_per_row[1]);
	}
	return TextFinish(&buf);
}

/* Read one line of at most size - 1 characters at *at; false at the end or if too long */
static bool
NextLine(const char *text, size_t len, size_t *at, char *line, size_t size)
{
	size_t		n = 0;

	if (*at >= len)
		return false;
	while (*at < len && text[*at] != '\n')
	{
		if (n + 1 >= size || text[*at] == '\0')
			return false;
		line[n++] = text[(*at)++];
	}
	line[n] = '\0';
	(*at)++;
	return true;
}

/* See host_profile.h: strict, every line as HostProfileToText writes it */
bool
HostProfileFromText(const char *text, size_t len, HostProfile *profile)
{
	char		line[256];
	size_t		at = 0;
	int			version,
				sets[3],
				measured,
				consumed = 0;

	memset(profile, 0, sizeof(HostProfile));
	if (!NextLine(text, len, &at, line, sizeof(line)) ||
		sscanf(line, "silvan host profile %d%n", &version, &consumed) != 1 ||
		line[consumed] != '\0' || version != HOST_PROFILE_TEXT_VERSION ||
		!NextLine(text, len, &at, line, sizeof(line)) || strncmp(line, "cpu ", 4) != 0 ||
		strlen(line + 4) >= sizeof(profile->cpu))
		return false;
	strcpy(profile->cpu, line + 4);
	if (!NextLine(text, len, &at, line, sizeof(line)) ||
		sscanf(line, "sets %d %d %d", &sets[0], &sets[1], &sets[2]) != 3 ||
		!NextLine(text, len, &at, line, sizeof(line)) ||
		sscanf(line, "measured %d %lf", &measured, &profile->measure_ms) != 2)
		return false;
	profile->sse2 = sets[0] == 1;
	profile->avx2 = sets[1] == 1;
	profile->avx512f = sets[2] == 1;
	profile->measured = measured == 1;
	for (int c = 0; c < HOST_NUM_CHOICES; c++)
	{
		HostChoiceValue *v = &profile->choices[c];
		char		name[32];
		int			pick,
					how;

		if (!NextLine(text, len, &at, line, sizeof(line)) ||
			sscanf(line, "choice %31s %d %d %d %lf %lf", name, &pick, &how, &v->rounds,
				   &v->us_per_row[0], &v->us_per_row[1]) != 6 ||
			strcmp(name, host_choices[c].name) != 0 || pick < 0 || pick > 1 ||
			how < 0 || how > HOST_HOW_SET || v->rounds < 0 ||
			(pick == 1 && !HostProfileCan(profile, c)))
			return false;
		v->pick = (uint8_t) pick;
		v->how = (uint8_t) how;
	}
	return at == len;
}

/* See host_profile.h */
void
HostProfileDescribeChoice(const HostProfile *profile, HostChoice choice, char *out,
						  size_t size)
{
	const HostChoiceInfo *info = &host_choices[choice];
	const HostChoiceValue *v = &profile->choices[choice];
	int			pick = Picks(profile, choice) ? 1 : 0;
	size_t		len;

	len = snprintf(out, size, "%s (%s", info->alternatives[pick], HostChoiceHowName(v->how));
	if (v->how == HOST_HOW_UNAVAILABLE && info->needs != NULL && len < size)
		len += snprintf(out + len, size - len, ": no %s", info->needs);
	if (v->rounds > 0 && len < size)
		len += snprintf(out + len, size - len, ": %s %.3f, %s %.3f us/row, %d rounds",
						info->alternatives[0], v->us_per_row[0], info->alternatives[1],
						v->us_per_row[1], v->rounds);
	if (len < size)
		snprintf(out + len, size - len, ")");
}
