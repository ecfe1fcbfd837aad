/*
 * code_cache.h
 *		Machine code kept on disk across backends (code_cache.c).
 *
 * Keys are byte strings that determine the machine code exactly (jit.c
 * builds them); values are relocatable object files.  Every failure is a
 * miss or a skipped store; nothing here raises.
 */
#ifndef SILVAN_CODE_CACHE_H
#define SILVAN_CODE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern void CodeCacheConfigure(const char *dir, int max_entries);
extern void CodeCacheSetBudget(int64_t max_bytes, int64_t max_entry_bytes);
extern bool CodeCacheEnabled(void);
extern void CodeCacheSetStoring(bool storing);
extern uint64_t CodeCacheHash(const char *key, size_t key_len);
/* An entry's object where it lies in a private mapping of its file (CodeCacheMap) */
typedef struct CodeCacheView
{
	void	   *base;			/* the mapping */
	size_t		size;
	uint8_t    *data;			/* the object: 64-byte aligned */
	size_t		len;
} CodeCacheView;

extern void *CodeCacheLoad(const char *key, size_t key_len, size_t *object_len);
extern bool CodeCacheMap(const char *key, size_t key_len, CodeCacheView *view);
extern void CodeCacheUnmap(CodeCacheView *view);
extern void CodeCacheStore(const char *key, size_t key_len, const void *object,
						   size_t object_len);

#endif							/* SILVAN_CODE_CACHE_H */
