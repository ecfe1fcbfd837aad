/*
 * host_choices.c
 *		The choices of code generation that depend on the host CPU: gathers
 *		against scalar loads, add-with-carry hops, AVX-512 vector walks.
 *
 * Code generation (compile.c's layout pass) and the default schedule
 * (schedule.c) and the tuner's space (tune_space.c) ask them here.  The
 * tests and silvan.vector_walk set each choice's policy: -1 decide by the
 * CPU (the default), 0 never, 1 wherever the CPU's features allow.
 */
#include <stdbool.h>

#include "silvan/codegen.h"
#include "silvan/compiler.h"
#include "silvan/host_choices.h"
#include "silvan/host_id.h"

/* The policies of CodegenSetGatherPolicy, CodegenSetCarryPolicy, CodegenSetVectorWalkPolicy */
static int	gather_policy = -1;
static int	carry_policy = -1;
static int	vector_walk_policy = -1;

/*
 * The host facts below come from CPUID (host_id.c), not from LLVM: the
 * code cache's source key holds them, and a backend finds cached code
 * without loading LLVM
 */

/* Is the host an AMD core? */
static bool
HostIsAmd(void)
{
	return HostVendorIsAmd();
}

/*
 * Does the host CPU gather fast?  It needs AVX2 or AVX-512 (the host's
 * features), and not an AMD core: their gathers are microcoded, and a
 * tile walked slower with gathers than with scalar loads.
 */
bool
HostHasFastGathers(void)
{
	if (!HostHasFeature("avx2") && !HostHasFeature("avx512f"))
		return false;
	if (gather_policy >= 0)
		return gather_policy > 0;
	return !HostIsAmd();
}

/*
 * Should default schedules walk rows as the lanes of AVX-512 vectors
 * (vectorWalk, codegen_walk_vector.c)?  Where the host has AVX-512F and
 * gathers fast (not an AMD core).  There the XGBoost bench models'
 * kernels walk faster than 16 rows in lock-step with add-with-carry hops,
 * bit for bit the same.
 */
bool
CodegenHostVectorWalk(void)
{
	if (!HostHasFeature("avx512f"))
		return false;
	if (vector_walk_policy >= 0)
		return vector_walk_policy > 0;
	return HostHasFastGathers();
}

/* Tests: -1 decide by CPU (default), 0 never walk as vectors, 1 where AVX-512F allows */
void
CodegenSetVectorWalkPolicy(int policy)
{
	vector_walk_policy = policy;
}

/* Tests: -1 decide by CPU (default), 0 never gather, 1 gather where AVX2 allows */
void
CodegenSetGatherPolicy(int policy)
{
	gather_policy = policy;
}

/*
 * Should a hop of the perfect layout be one add-with-carry (child = g + g
 * + the compare's carry: vucomiss, adc) instead of LLVM's xor, setb and
 * lea?  On x86 (SSE2 in LLVM's host features), but not an AMD core: the
 * XGBoost bench models' kernels walked faster with it on an Intel core
 * and slower on an AMD one.
 */
bool
HostHasCheapCarry(void)
{
	if (!HostHasFeature("sse2"))
		return false;
	if (carry_policy >= 0)
		return carry_policy > 0;
	return !HostIsAmd();
}

/* Tests: -1 decide by CPU (default), 0 never, 1 on any x86 CPU */
void
CodegenSetCarryPolicy(int policy)
{
	carry_policy = policy;
}
