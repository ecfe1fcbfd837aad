/*
 * repr_keys.c
 *		Integer keys: float compares of a walk done as unsigned integer
 *		compares, on keys of the rows' values and of the split bounds.
 *
 * A hop of the perfect layout loads the node's feature, loads the row's
 * value of it and compares it with the node's bound.  In floating point
 * that chain is an FP load (longer than an integer load on some cores)
 * and a ucomiss into the flags; on integers it is an integer load folded
 * into one cmp.  On a Zen 5 the integer hop made the 6- and 8-deep bench
 * forests' kernels 1.3 to 1.6 times faster; whether it pays on a CPU is
 * the host profile's `keys` choice, measured there (host_probe.c).
 *
 * The key of a float32 value v with bits u is an order-preserving map to
 * uint32_t, the classic one with the two zeros made one:
 *
 *     key(v) = u ^ 0xFFFFFFFF      v negative (sign bit set)
 *     key(v) = u | 0x80000000      v positive
 *     key(+0) = key(-0) = 0x80000000
 *
 * so that for non-NaN a and b, a < b iff key(a) < key(b), unsigned.  Keys
 * of values run from key(-inf) = 0x007FFFFF to key(+inf) = 0xFF800000;
 * NaN gets a key outside that range, on the side the walk's compare needs:
 *
 *   REPR_PLAIN_X_BELOW  slot 1 iff x <u b (x < b or x NaN): a row's NaN
 *                       is key 0, below every bound's key;
 *   REPR_PLAIN_BELOW_X  slot 1 iff b <u x (b < x, or either NaN): a row's
 *                       NaN is 0xFFFFFFFF, above every bound's key, and a
 *                       NaN bound (the value below -inf) is key 0, below
 *                       every row's.
 *
 * So the walk takes the very slot it takes on floats, for every row: the
 * predictions are the same bit for bit.  Only the PLAIN record layout
 * (every split numeric, NaN one way) in float precision has such a form.
 *
 * The layout stores its bounds as keys (the threshold slot holds the key's
 * bits; leaves keep their values), and CompiledForestRun hands the kernel
 * the rows' keys in place of the rows, made by ReprKeyRows in one pass
 * over the batch, four values at a time.  That pass costs a few
 * operations per feature of a row, which a forest repays only if its rows
 * take many hops per feature: ReprKeysPay says when.
 */
#include <string.h>

#include "silvan/codegen.h"

/* The key of a float's bits: NaN not handled */
static inline uint32_t
KeyOfBits(uint32_t bits)
{
	if ((bits & 0x7FFFFFFFu) == 0)
		return 0x80000000u;
	return bits ^ ((uint32_t) ((int32_t) bits >> 31) | 0x80000000u);
}

/* Is a float's bit pattern NaN? */
static inline bool
BitsAreNaN(uint32_t bits)
{
	return (bits & 0x7FFFFFFFu) > 0x7F800000u;
}

/* The key a row's NaN takes in a walk of this form */
uint32_t
ReprKeyOfNaN(ReprPlainForm form)
{
	return form == REPR_PLAIN_X_BELOW ? 0u : UINT32_MAX;
}

/* The key stored for a split's bound b (NaN: the bound below -inf of BELOW_X) */
uint32_t
ReprKeyOfBound(float b)
{
	uint32_t	bits;

	memcpy(&bits, &b, sizeof(bits));
	return BitsAreNaN(bits) ? 0u : KeyOfBits(bits);
}

/* Four keys at a time: GCC's and clang's vector extensions, SSE2 on x86-64 */
typedef uint32_t KeyVector __attribute__((vector_size(16)));
typedef int32_t KeyMask __attribute__((vector_size(16)));

/* The key of one value's bits for a walk whose NaN key is nan_key */
static inline uint32_t
KeyOfRowBits(uint32_t bits, uint32_t nan_key)
{
	return BitsAreNaN(bits) ? nan_key : KeyOfBits(bits);
}

/*
 * The keys of n float values (rows row-major) for a walk of this form:
 * four at a time, branch-free (a mask per rule), then the rest one by one
 */
void
ReprKeyRows(const float *values, size_t n, ReprPlainForm form, uint32_t *keys)
{
	uint32_t	nan_key = ReprKeyOfNaN(form);
	size_t		i = 0;

	for (; i + 4 <= n; i += 4)
	{
		KeyVector	bits;
		KeyVector	magnitude;
		KeyVector	key;
		KeyMask		zero;
		KeyMask		nan;

		memcpy(&bits, &values[i], sizeof(bits));
		magnitude = bits & 0x7FFFFFFFu;
		key = bits ^ ((KeyVector) ((KeyMask) bits >> 31) | 0x80000000u);
		zero = magnitude == 0;
		nan = magnitude > 0x7F800000u;
		key = (key & ~(KeyVector) zero) | (0x80000000u & (KeyVector) zero);
		key = (key & ~(KeyVector) nan) | (nan_key & (KeyVector) nan);
		memcpy(&keys[i], &key, sizeof(key));
	}
	for (; i < n; i++)
	{
		uint32_t	bits;

		memcpy(&bits, &values[i], sizeof(bits));
		keys[i] = KeyOfRowBits(bits, nan_key);
	}
}

/*
 * Do a forest's walks repay the keys' pass over each row?  A row takes
 * `hops` hops in all (the sum of the trees' depths) and has num_features
 * values; a key costs about what a quarter of a hop saves.  The wide bench
 * model (200 trees of depth 6, 500 features) does not repay it, the
 * others do.
 */
bool
ReprKeysPay(int64_t hops, int32_t num_features)
{
	return hops >= (int64_t) num_features * REPR_KEY_HOPS_PER_FEATURE;
}

/* May buffers built this way compare keys?  (PLAIN float records with a carry form) */
bool
ReprKeysFit(const ReprBuffers *buffers, ForestPrecision precision)
{
	return buffers->layout == REPR_SPLIT_PLAIN && buffers->plain_form != REPR_PLAIN_GO_LEFT &&
		precision == FOREST_FLOAT32;
}
