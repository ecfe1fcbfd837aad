/*
 * sha256.c
 *		SHA-256 as FIPS 180-4 specifies it.
 *
 * The code cache names a model's machine code by a digest of the model, so
 * the digest must be one that nobody can make collide: two models with
 * one digest would share machine code whose constants belong to one of
 * them.  A 64-bit hash would do for naming files (code_cache.c compares
 * whole keys), but not inside a key.  An x86-64 CPU with the SHA
 * extensions (Intel since Goldmont and Ice Lake, AMD since Zen) takes the
 * SHA-NI path, much faster than plain C, which matters where a fresh
 * backend hashes a large model before its first prediction (a megabyte
 * for a thousand deep trees).
 */
#include <stdbool.h>
#include <string.h>

#include "silvan/sha256.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_HAVE_SHANI 1
#endif

typedef void (*Sha256BlocksFn) (uint32_t state[8], const uint8_t *data, size_t blocks);

static const uint32_t round_constants[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* Rotate right */
static inline uint32_t
Ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* Mix one 64-byte block into the state, in plain C */
static void
Sha256BlockPortable(uint32_t state[8], const uint8_t block[64])
{
	uint32_t	w[64];
	uint32_t	a = state[0],
				b = state[1],
				c = state[2],
				d = state[3],
				e = state[4],
				f = state[5],
				g = state[6],
				h = state[7];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t) block[4 * i] << 24 | (uint32_t) block[4 * i + 1] << 16 |
			(uint32_t) block[4 * i + 2] << 8 | (uint32_t) block[4 * i + 3];
	for (int i = 16; i < 64; i++)
	{
		uint32_t	s0 = Ror(w[i - 15], 7) ^ Ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t	s1 = Ror(w[i - 2], 17) ^ Ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	for (int i = 0; i < 64; i++)
	{
		uint32_t	t1 = h + (Ror(e, 6) ^ Ror(e, 11) ^ Ror(e, 25)) + ((e & f) ^ (~e & g)) +
			round_constants[i] + w[i];
		uint32_t	t2 = (Ror(a, 2) ^ Ror(a, 13) ^ Ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
	state[4] += e;
	state[5] += f;
	state[6] += g;
	state[7] += h;
}

/* Mix blocks into the state, in plain C */
static void
Sha256BlocksPortable(uint32_t state[8], const uint8_t *data, size_t blocks)
{
	for (size_t b = 0; b < blocks; b++)
		Sha256BlockPortable(state, data + 64 * b);
}

#ifdef SHA256_HAVE_SHANI
/*
 * Mix blocks into the state with the SHA extensions: the state lives as
 * ABEF and CDGH in two registers; each step of four rounds adds its round
 * constants to four schedule words, of which sha256msg1/msg2 make the
 * next four (W[t] from W[t-16], W[t-15], W[t-7], W[t-2]).
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void
Sha256BlocksShaNi(uint32_t state[8], const uint8_t *data, size_t blocks)
{
	const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i		tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *) &state[0]), 0xB1);
	__m128i		efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *) &state[4]), 0x1B);
	__m128i		abef = _mm_alignr_epi8(tmp, efgh, 8);
	__m128i		cdgh = _mm_blend_epi16(efgh, tmp, 0xF0);

	for (size_t b = 0; b < blocks; b++, data += 64)
	{
		__m128i		saved_abef = abef;
		__m128i		saved_cdgh = cdgh;
		__m128i		w[4];

		for (int j = 0; j < 16; j++)
		{
			__m128i		words;

			if (j < 4)
				w[j] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) (data + 16 * j)), byte_swap);
			else
			{
				__m128i		t = _mm_sha256msg1_epu32(w[j % 4], w[(j + 1) % 4]);

				t = _mm_add_epi32(t, _mm_alignr_epi8(w[(j + 3) % 4], w[(j + 2) % 4], 4));
				w[j % 4] = _mm_sha256msg2_epu32(t, w[(j + 3) % 4]);
			}
			words = _mm_add_epi32(w[j % 4],
								  _mm_loadu_si128((const __m128i *) &round_constants[4 * j]));
			cdgh = _mm_sha256rnds2_epu32(cdgh, abef, words);
			abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(words, 0x0E));
		}
		abef = _mm_add_epi32(abef, saved_abef);
		cdgh = _mm_add_epi32(cdgh, saved_cdgh);
	}
	tmp = _mm_shuffle_epi32(abef, 0x1B);
	cdgh = _mm_shuffle_epi32(cdgh, 0xB1);
	_mm_storeu_si128((__m128i *) &state[0], _mm_blend_epi16(tmp, cdgh, 0xF0));
	_mm_storeu_si128((__m128i *) &state[4], _mm_alignr_epi8(cdgh, tmp, 8));
}

/* Does this CPU have the SHA extensions (and the SSE they build on)? */
static bool
CpuHasShaNi(void)
{
	unsigned int a,
				b,
				c,
				d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
		return false;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)) != 0;
}
#endif

/* -1: not chosen yet; 0: plain C; 1: SHA-NI */
static int	sha256_use_shani = -1;

/* The block function this CPU runs best */
static Sha256BlocksFn
Sha256Blocks(void)
{
#ifdef SHA256_HAVE_SHANI
	if (sha256_use_shani < 0)
		sha256_use_shani = CpuHasShaNi() ? 1 : 0;
	if (sha256_use_shani > 0)
		return Sha256BlocksShaNi;
#endif
	return Sha256BlocksPortable;
}

/* Tests: false runs plain C even where SHA-NI is there; true restores the choice */
bool
Sha256UseAccelerated(bool use)
{
	sha256_use_shani = -1;
	if (!use)
		sha256_use_shani = 0;
#ifdef SHA256_HAVE_SHANI
	return use && CpuHasShaNi();
#else
	return false;
#endif
}

/* Start a hash */
void
Sha256Init(Sha256 *sha)
{
	static const uint32_t initial[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(sha->state, initial, sizeof(initial));
	sha->length = 0;
	sha->used = 0;
}

/* Hash len more bytes */
void
Sha256Update(Sha256 *sha, const void *data, size_t len)
{
	const uint8_t *p = data;

	sha->length += len;
	if (sha->used > 0)
	{
		size_t		take = len < 64 - sha->used ? len : 64 - sha->used;

		memcpy(sha->block + sha->used, p, take);
		sha->used += take;
		p += take;
		len -= take;
		if (sha->used < 64)
			return;
		Sha256Blocks() (sha->state, sha->block, 1);
		sha->used = 0;
	}
	if (len >= 64)
	{
		Sha256Blocks() (sha->state, p, len / 64);
		p += len / 64 * 64;
		len %= 64;
	}
	memcpy(sha->block, p, len);
	sha->used = len;
}

/* Pad, finish and write the digest (big-endian words) */
void
Sha256Final(Sha256 *sha, uint8_t digest[SHA256_DIGEST_LEN])
{
	uint64_t	bits = sha->length * 8;
	uint8_t		tail[72] = {0x80};
	size_t		pad = sha->used < 56 ? 56 - sha->used : 120 - sha->used;

	for (int i = 0; i < 8; i++)
		tail[pad + i] = (uint8_t) (bits >> (56 - 8 * i));
	Sha256Update(sha, tail, pad + 8);
	for (int i = 0; i < 8; i++)
	{
		digest[4 * i] = (uint8_t) (sha->state[i] >> 24);
		digest[4 * i + 1] = (uint8_t) (sha->state[i] >> 16);
		digest[4 * i + 2] = (uint8_t) (sha->state[i] >> 8);
		digest[4 * i + 3] = (uint8_t) sha->state[i];
	}
}

/* The digest of data as 64 lowercase hex digits */
void
Sha256Hex(const void *data, size_t len, char hex[2 * SHA256_DIGEST_LEN + 1])
{
	Sha256		sha;
	uint8_t		digest[SHA256_DIGEST_LEN];
	static const char digits[] = "0123456789abcdef";

	Sha256Init(&sha);
	Sha256Update(&sha, data, len);
	Sha256Final(&sha, digest);
	for (int i = 0; i < SHA256_DIGEST_LEN; i++)
	{
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 15];
	}
	hex[2 * SHA256_DIGEST_LEN] = '\0';
}
