/*
 * sha256.h
 *		SHA-256 (FIPS 180-4), for keys that name content exactly.
 */
#ifndef SILVAN_SHA256_H
#define SILVAN_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

/* A hash in progress: Sha256Init, Sha256Update as often as needed, Sha256Final */
typedef struct Sha256
{
	uint32_t	state[8];
	uint64_t	length;			/* bytes hashed so far */
	uint8_t		block[64];		/* the partial block */
	size_t		used;			/* bytes in block */
} Sha256;

extern void Sha256Init(Sha256 *sha);
extern void Sha256Update(Sha256 *sha, const void *data, size_t len);
extern void Sha256Final(Sha256 *sha, uint8_t digest[SHA256_DIGEST_LEN]);
extern bool Sha256UseAccelerated(bool use);
extern void Sha256Hex(const void *data, size_t len, char hex[2 * SHA256_DIGEST_LEN + 1]);

#endif							/* SILVAN_SHA256_H */
