/*
 * code_cache.c
 *		Machine code kept on disk, so that a backend (or a parallel worker)
 *		loads what another one compiled instead of compiling it again.
 *
 * An entry is keyed by a byte string that determines the machine code:
 * jit.c stores each object under two, its IR key (the LLVM bitcode of the
 * batch function before optimization) and its source key (digests of the
 * model and profile, the schedule's text), each followed by the target
 * triple, the host CPU's identity from CPUID (host_id.c), the LLVM and
 * silvan versions and the build ID (see jit.c), and beside it the compiler's image of the buffers
 * that code reads, under an image key.  To this file keys and objects are
 * bytes.  The file
 * name is a 64-bit hash of the key; the file holds the whole key, so a
 * load compares it byte for byte, and a checksum of the object.  Anything
 * that does not match (another key, a short or altered file) is a miss,
 * never an error: the caller compiles as if the cache were empty.
 *
 * File: "SILVANCODE2\n", key length, object length, object checksum (three
 * little-endian uint64), the key, zeros up to a multiple of 64 bytes, the
 * object.  The object's place is aligned so that a reader may map the file
 * and use the object where it lies (CodeCacheMap: the compiler's image of
 * a big model's buffers, read in place instead of copied, from pages the
 * backends share).  Files are written to a temporary name and renamed, and
 * never changed afterwards, so a reader never sees half a file and a
 * mapping stays valid; two backends storing the same entry write the same
 * bytes.  The directory
 * holds at most max_entries files and max_bytes bytes (CodeCacheSetBudget:
 * silvan.code_cache_entries, silvan.code_cache_size): storing into a full
 * one first removes the entries used least recently (a load touches its
 * file's times); an entry over max_entry_bytes (silvan.code_cache_entry_
 * max_size) is never stored.
 *
 * Nothing here includes postgres.h or raises; every failure is a miss or
 * a skipped store.  Only the backend's own thread calls it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "silvan/code_cache.h"

#define CODE_CACHE_MAGIC		"SILVANCODE2\n"
#define CODE_CACHE_MAGIC_LEN	12
#define CODE_CACHE_HEADER_LEN	(CODE_CACHE_MAGIC_LEN + 3 * 8)
#define CODE_CACHE_ALIGN		64
/* Where the object of an entry with a key of key_len bytes starts */
#define CODE_CACHE_OBJECT_AT(key_len) \
	(((uint64_t) CODE_CACHE_HEADER_LEN + (key_len) + CODE_CACHE_ALIGN - 1) & ~(uint64_t) (CODE_CACHE_ALIGN - 1))
#define CODE_CACHE_MAX_FILE		(INT64_C(1) << 30)

static char *cache_dir = NULL;
static int	cache_max_entries = 1024;
static int64_t cache_max_bytes = 0;	/* 0: no budget */
static int64_t cache_max_entry_bytes = 0;	/* 0: up to CODE_CACHE_MAX_FILE */
static bool cache_storing = true;

/* Use dir for the cache (NULL: no disk cache), keeping at most max_entries files */
void
CodeCacheConfigure(const char *dir, int max_entries)
{
	free(cache_dir);
	cache_dir = dir != NULL && dir[0] != '\0' ? strdup(dir) : NULL;
	cache_max_entries = max_entries;
}

/*
 * Hold the directory to max_bytes in all (0: no budget), and store no
 * entry of more than max_entry_bytes (0: up to 1 GiB)
 */
void
CodeCacheSetBudget(int64_t max_bytes, int64_t max_entry_bytes)
{
	cache_max_bytes = max_bytes > 0 ? max_bytes : 0;
	cache_max_entry_bytes = max_entry_bytes > 0 ? max_entry_bytes : 0;
}

/*
 * Store new entries (the default), or only load them: the tuner compiles
 * hundreds of candidates it throws away, which must not push the code
 * that backends use out of the cache
 */
void
CodeCacheSetStoring(bool storing)
{
	cache_storing = storing;
}

/* Is a disk cache configured? */
bool
CodeCacheEnabled(void)
{
	return cache_dir != NULL && cache_max_entries > 0;
}

/* Mix one word into a lane of the hash */
static inline uint64_t
HashRound(uint64_t h, uint64_t w)
{
	h ^= w * UINT64_C(0xff51afd7ed558ccd);
	return (h << 31 | h >> 33) * UINT64_C(0xc4ceb9fe1a85ec53);
}

/*
 * A 64-bit hash of data from a seed: 32 bytes at a time in four
 * independent lanes (so the multiplies overlap), then eight at a time,
 * each word multiplied in and mixed (in the manner of wyhash and xxHash;
 * not a cryptographic hash: entries are compared in full before use)
 */
static uint64_t
HashBytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t	h = seed ^ (len * UINT64_C(0x9e3779b97f4a7c15));
	uint64_t	lane[4] = {h, h + 1, h + 2, h + 3};
	uint64_t	w;

	for (; len >= 32; p += 32, len -= 32)
		for (int l = 0; l < 4; l++)
		{
			memcpy(&w, p + 8 * l, 8);
			lane[l] = HashRound(lane[l], w);
		}
	for (int l = 0; l < 4; l++)
		h = HashRound(h, lane[l]);
	for (; len >= 8; p += 8, len -= 8)
	{
		memcpy(&w, p, 8);
		h = HashRound(h, w);
	}
	w = 0;
	memcpy(&w, p, len);
	h ^= w * UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 29;
	h *= UINT64_C(0x9e3779b97f4a7c15);
	return h ^ (h >> 32);
}

/* The 64-bit hash that names a key's entry */
uint64_t
CodeCacheHash(const char *key, size_t key_len)
{
	return HashBytes(key, key_len, UINT64_C(0xcbf29ce484222325));
}

/* The path of an entry (or of a temporary file for it, when tmp) */
static void
EntryPath(uint64_t hash, bool tmp, char *path, size_t size)
{
	if (tmp)
		snprintf(path, size, "%s/%016llx.tmp%ld", cache_dir, (unsigned long long) hash,
				 (long) getpid());
	else
		snprintf(path, size, "%s/%016llx.o", cache_dir, (unsigned long long) hash);
}

/* Store a uint64 little-endian */
static void
PutU64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char) (v >> (8 * i));
}

/* Read a little-endian uint64 */
static uint64_t
GetU64(const unsigned char *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t) p[i] << (8 * i);
	return v;
}

/* Read exactly len bytes; false on a short read or error */
static bool
ReadAll(int fd, void *buf, size_t len)
{
	char	   *p = buf;

	while (len > 0)
	{
		ssize_t		n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t) n;
	}
	return true;
}

/* Write exactly len bytes; false on error */
static bool
WriteAll(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0)
	{
		ssize_t		n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t) n;
	}
	return true;
}

/* Read and check an open entry; the object (malloc'd) when it holds key */
static void *
ReadEntry(int fd, const char *key, size_t key_len, size_t *object_len)
{
	unsigned char header[CODE_CACHE_HEADER_LEN];
	struct stat st;
	uint64_t	stored_key_len,
				stored_object_len,
				checksum;
	char	   *stored_key;
	void	   *object;
	bool		same;

	if (fstat(fd, &st) != 0 || st.st_size < CODE_CACHE_HEADER_LEN ||
		st.st_size > CODE_CACHE_MAX_FILE ||
		!ReadAll(fd, header, sizeof(header)) ||
		memcmp(header, CODE_CACHE_MAGIC, CODE_CACHE_MAGIC_LEN) != 0)
		return NULL;
	stored_key_len = GetU64(header + CODE_CACHE_MAGIC_LEN);
	stored_object_len = GetU64(header + CODE_CACHE_MAGIC_LEN + 8);
	checksum = GetU64(header + CODE_CACHE_MAGIC_LEN + 16);
	/* the lengths must add up to the file's size before anything is allocated */
	if (stored_key_len != key_len || stored_object_len == 0 ||
		stored_object_len > (uint64_t) st.st_size ||
		(uint64_t) st.st_size != CODE_CACHE_OBJECT_AT(key_len) + stored_object_len)
		return NULL;
	if ((stored_key = malloc(key_len + CODE_CACHE_ALIGN)) == NULL)
		return NULL;
	/* the key and the zeros after it */
	same = ReadAll(fd, stored_key, CODE_CACHE_OBJECT_AT(key_len) - CODE_CACHE_HEADER_LEN) &&
		memcmp(stored_key, key, key_len) == 0;
	free(stored_key);
	if (!same || (object = malloc(stored_object_len)) == NULL)
		return NULL;
	if (!ReadAll(fd, object, stored_object_len) ||
		CodeCacheHash(object, stored_object_len) != checksum)
	{
		free(object);
		return NULL;
	}
	*object_len = stored_object_len;
	return object;
}

/*
 * The object stored for key (malloc'd), or NULL on any miss: no cache,
 * no entry, or an entry that is not exactly this key's
 */
void *
CodeCacheLoad(const char *key, size_t key_len, size_t *object_len)
{
	char		path[4096];
	int			fd;
	void	   *object;

	if (!CodeCacheEnabled())
		return NULL;
	EntryPath(CodeCacheHash(key, key_len), false, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	object = ReadEntry(fd, key, key_len, object_len);
	close(fd);
	if (object != NULL)
		(void) utimensat(AT_FDCWD, path, NULL, 0);	/* used now */
	return object;
}

/*
 * Map key's entry and give its object where it lies in the mapping (64-byte
 * aligned; private: writes to it stay in this process), checked as
 * CodeCacheLoad checks; false on a miss.  CodeCacheUnmap releases it.
 */
bool
CodeCacheMap(const char *key, size_t key_len, CodeCacheView *view)
{
	char		path[4096];
	struct stat st;
	const unsigned char *file;
	uint64_t	object_len;
	int			fd;
	bool		ok;

	memset(view, 0, sizeof(CodeCacheView));
	if (!CodeCacheEnabled())
		return false;
	EntryPath(CodeCacheHash(key, key_len), false, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	if (fstat(fd, &st) != 0 || st.st_size < CODE_CACHE_HEADER_LEN || st.st_size > CODE_CACHE_MAX_FILE ||
		(view->base = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE,
						   fd, 0)) == MAP_FAILED)
	{
		view->base = NULL;
		close(fd);
		return false;
	}
	close(fd);
	view->size = st.st_size;
	file = view->base;
	object_len = GetU64(file + CODE_CACHE_MAGIC_LEN + 8);
	/* the same checks as ReadEntry's, on the mapping */
	ok = memcmp(file, CODE_CACHE_MAGIC, CODE_CACHE_MAGIC_LEN) == 0 &&
		GetU64(file + CODE_CACHE_MAGIC_LEN) == key_len && object_len > 0 &&
		object_len <= (uint64_t) st.st_size &&
		(uint64_t) st.st_size == CODE_CACHE_OBJECT_AT(key_len) + object_len &&
		memcmp(file + CODE_CACHE_HEADER_LEN, key, key_len) == 0 &&
		CodeCacheHash((const char *) file + CODE_CACHE_OBJECT_AT(key_len), object_len) ==
		GetU64(file + CODE_CACHE_MAGIC_LEN + 16);
	if (!ok)
	{
		CodeCacheUnmap(view);
		return false;
	}
	view->data = (uint8_t *) view->base + CODE_CACHE_OBJECT_AT(key_len);
	view->len = object_len;
	(void) utimensat(AT_FDCWD, path, NULL, 0);	/* used now */
	return true;
}

/* Release a mapping CodeCacheMap made (nothing if none) */
void
CodeCacheUnmap(CodeCacheView *view)
{
	if (view->base != NULL)
		munmap(view->base, view->size);
	memset(view, 0, sizeof(CodeCacheView));
}

/* An entry's file, as MakeRoom sees it */
typedef struct CacheFile
{
	char		name[32];
	struct timespec used;
	int64_t		bytes;
} CacheFile;

/* Order files by last use, oldest first */
static int
CacheFileCompare(const void *a, const void *b)
{
	const CacheFile *x = a;
	const CacheFile *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/*
 * Make room for an entry of new_bytes: remove the least recently used
 * entries until one more fits within max_entries and max_bytes
 */
static void
MakeRoom(int64_t new_bytes)
{
	DIR		   *dir = opendir(cache_dir);
	struct dirent *de;
	char		path[4096];
	CacheFile  *files = NULL;
	int64_t		count = 0;
	int64_t		capacity = 0;
	int64_t		total = 0;

	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL)
	{
		size_t		n = strlen(de->d_name);
		struct stat st;

		if (n != 18 || strcmp(de->d_name + 16, ".o") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
		if (stat(path, &st) != 0)
			continue;
		if (count == capacity)
		{
			CacheFile  *more = realloc(files, sizeof(CacheFile) * (size_t) (capacity * 2 + 64));

			if (more == NULL)
				break;
			files = more;
			capacity = capacity * 2 + 64;
		}
		snprintf(files[count].name, sizeof(files[count].name), "%s", de->d_name);
		files[count].used = st.st_mtim;
		files[count].bytes = st.st_size;
		total += st.st_size;
		count++;
	}
	closedir(dir);
	if (count > 0)
		qsort(files, (size_t) count, sizeof(CacheFile), CacheFileCompare);
	for (int64_t i = 0; i < count && (count - i >= cache_max_entries ||
									  (cache_max_bytes > 0 && total + new_bytes > cache_max_bytes)); i++)
	{
		snprintf(path, sizeof(path), "%s/%s", cache_dir, files[i].name);
		if (unlink(path) == 0)
			total -= files[i].bytes;
	}
	free(files);
}

/* Store an entry for key, best effort: a failure leaves no file behind */
void
CodeCacheStore(const char *key, size_t key_len, const void *object, size_t object_len)
{
	unsigned char header[CODE_CACHE_HEADER_LEN];
	uint64_t	hash = CodeCacheHash(key, key_len);
	char		tmp[4096];
	char		path[4096];
	int			fd;
	bool		ok;

	static const char zeros[CODE_CACHE_ALIGN];
	uint64_t	file_len;

	if (!CodeCacheEnabled() || !cache_storing || object_len == 0 ||
		key_len + object_len > (size_t) CODE_CACHE_MAX_FILE - CODE_CACHE_HEADER_LEN - CODE_CACHE_ALIGN)
		return;
	file_len = CODE_CACHE_OBJECT_AT(key_len) + object_len;
	if ((cache_max_entry_bytes > 0 && (int64_t) file_len > cache_max_entry_bytes) ||
		(cache_max_bytes > 0 && (int64_t) file_len > cache_max_bytes))
		return;
	(void) mkdir(cache_dir, S_IRWXU);
	MakeRoom((int64_t) file_len);
	memcpy(header, CODE_CACHE_MAGIC, CODE_CACHE_MAGIC_LEN);
	PutU64(header + CODE_CACHE_MAGIC_LEN, key_len);
	PutU64(header + CODE_CACHE_MAGIC_LEN + 8, object_len);
	PutU64(header + CODE_CACHE_MAGIC_LEN + 16, CodeCacheHash(object, object_len));
	EntryPath(hash, true, tmp, sizeof(tmp));
	EntryPath(hash, false, path, sizeof(path));
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, S_IRUSR | S_IWUSR)) < 0)
		return;
	ok = WriteAll(fd, header, sizeof(header)) && WriteAll(fd, key, key_len) &&
		WriteAll(fd, zeros, CODE_CACHE_OBJECT_AT(key_len) - CODE_CACHE_HEADER_LEN - key_len) &&
		WriteAll(fd, object, object_len);
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0)
		(void) unlink(tmp);
}
