/*
 * host_id.c
 *		The host CPU's identity, from CPUID, for the keys of cached code.
 *
 * Machine code is compiled for LLVM's description of the host: a CPU name
 * and a feature list, both functions of what CPUID reports (vendor,
 * family, model, stepping, feature leaves) and of which register states
 * the kernel enabled (XCR0).  Keys of the disk cache carry that input
 * rather than LLVM's output, so that a backend can find its code without
 * loading LLVM; the LLVM version is in the key as well, so equal keys
 * mean LLVM would describe the host the same way.  Every leaf LLVM 14's
 * host detection reads is here (sys::getHostCPUName, getHostCPUFeatures),
 * but nothing that differs between cores of one machine or over time:
 * leaf 1's EBX (APIC ID, CLFLUSH size) is left out.
 *
 * Off x86 the identity is the machine's name from the compiler; nothing
 * here includes postgres.h.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "silvan/host_id.h"

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_identity[512];
static char host_description[96];
static bool host_sse2;
static bool host_avx2;
static bool host_avx512f;

#if defined(__x86_64__) || defined(__i386__)

/* The enabled register states (XCR0) when the OS supports XGETBV, else 0 */
static uint64_t
HostXcr0(unsigned ecx1)
{
	uint32_t	lo,
				hi;

	if (!(ecx1 & (1u << 27)))	/* OSXSAVE */
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t) hi << 32 | lo;
}

/* Append leaf/subleaf's registers (the ones named in mask: a b c d) if the CPU has it */
static void
HostLeaf(char *out, size_t size, unsigned max, unsigned leaf, unsigned subleaf, const char *mask)
{
	unsigned	r[4] = {0, 0, 0, 0};
	size_t		len = strlen(out);

	if (leaf > max)
		return;
	__cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
	snprintf(out + len, size - len, " %x.%x", leaf, subleaf);
	for (int k = 0; k < 4; k++)
		if (strchr(mask, "abcd"[k]) != NULL)
		{
			len = strlen(out);
			snprintf(out + len, size - len, " e%cx=%08x", "abcd"[k], r[k]);
		}
}

/*
 * The few facts the compiler's defaults ask of the host, as LLVM derives
 * its features: an instruction set counts only when the OS saves its
 * registers (XCR0: YMM state for AVX2, and the opmask and ZMM states for
 * AVX-512)
 */
static void
HostReadFeatures(unsigned max_basic, const char *vendor, unsigned ecx1, unsigned edx1)
{
	uint64_t	xcr0 = HostXcr0(ecx1);
	bool		ymm = (xcr0 & 0x6) == 0x6;
	bool		zmm = ymm && (xcr0 & 0xe0) == 0xe0;
	unsigned	a = 0,
				b = 0,
				c = 0,
				d = 0;

	if (max_basic >= 7)
		__cpuid_count(7, 0, a, b, c, d);
	host_sse2 = (edx1 & (1u << 26)) != 0;
	host_avx2 = ymm && (b & (1u << 5)) != 0;
	host_avx512f = zmm && (b & (1u << 16)) != 0;
}

/* The CPU in words from leaf 1's signature: vendor, family, model, stepping as Linux shows them */
static void
HostDescribe(const char *vendor, unsigned signature)
{
	unsigned	family = (signature >> 8) & 0xf;
	unsigned	model = (signature >> 4) & 0xf;

	if (family == 0xf)
		family += (signature >> 20) & 0xff;
	if (family == 0x6 || family >= 0xf)
		model |= ((signature >> 16) & 0xf) << 4;
	snprintf(host_description, sizeof(host_description), "%s family %u model %u stepping %u",
			 vendor, family, model, signature & 0xf);
}

/* Read the identity once */
static void
HostReadIdentity(void)
{
	unsigned	a,
				b,
				c,
				d;
	unsigned	max_basic,
				max_extended;
	char		vendor[13];
	size_t		len;

	__cpuid(0, max_basic, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	__cpuid(0x80000000, max_extended, b, c, d);
	__cpuid(1, a, b, c, d);
	snprintf(host_identity, sizeof(host_identity), "x86 %s signature %08x", vendor, a);
	HostLeaf(host_identity, sizeof(host_identity), max_basic, 1, 0, "cd");
	HostLeaf(host_identity, sizeof(host_identity), max_basic, 7, 0, "bcd");
	HostLeaf(host_identity, sizeof(host_identity), max_basic, 7, 1, "a");
	HostLeaf(host_identity, sizeof(host_identity), max_basic, 0xd, 1, "a");
	HostLeaf(host_identity, sizeof(host_identity), max_basic, 0x14, 0, "b");
	HostLeaf(host_identity, sizeof(host_identity), max_basic, 0x19, 0, "b");
	HostLeaf(host_identity, sizeof(host_identity), max_extended, 0x80000001, 0, "cd");
	HostLeaf(host_identity, sizeof(host_identity), max_extended, 0x80000008, 0, "b");
	len = strlen(host_identity);
	snprintf(host_identity + len, sizeof(host_identity) - len, " xcr0=%llx",
			 (unsigned long long) HostXcr0(c));
	HostDescribe(vendor, a);
	HostReadFeatures(max_basic, vendor, c, d);
}

#else

/* Off x86: the machine the compiler built for */
static void
HostReadIdentity(void)
{
#if defined(__aarch64__)
	snprintf(host_identity, sizeof(host_identity), "aarch64");
#else
	snprintf(host_identity, sizeof(host_identity), "unknown machine");
#endif
	snprintf(host_description, sizeof(host_description), "%s", host_identity);
}

#endif

/* The host CPU's identity: equal strings mean LLVM sees the same CPU */
const char *
HostIdentity(void)
{
	pthread_once(&host_once, HostReadIdentity);
	return host_identity;
}

/* The CPU in words: "AuthenticAMD family 26 model 2 stepping 1" */
const char *
HostCpuDescription(void)
{
	pthread_once(&host_once, HostReadIdentity);
	return host_description;
}

/* Has the host this instruction set ("sse2", "avx2", "avx512f"), usable? */
bool
HostHasFeature(const char *name)
{
	pthread_once(&host_once, HostReadIdentity);
	if (strcmp(name, "sse2") == 0)
		return host_sse2;
	if (strcmp(name, "avx2") == 0)
		return host_avx2;
	if (strcmp(name, "avx512f") == 0)
		return host_avx512f;
	return false;
}
