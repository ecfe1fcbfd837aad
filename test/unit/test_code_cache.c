/*
 * test_code_cache.c
 *		Machine code shared in a process and kept on disk (code_cache.c,
 *		jit.c's JitCompile), against the reference interpreter.
 *
 * A model compiled once is shared while its first compile lives, loaded
 * from the disk cache after that by its source key (no IR built), and
 * compiled again (with good entries stored over the bad ones) when the
 * entries are damaged in any way: cut short, a byte of the object or of
 * the key changed, a byte added, a wrong magic, lengths that lie.  Beside
 * the code lies the image of the buffers and text the passes built
 * (compile_image.c): a compile that finds both runs no pass and explains
 * itself exactly as the compile that stored them; a damaged image is
 * refused whole and the passes run.  A forest read without its trees finds
 * both, and its default schedule, by its digest alone.  A
 * model of the same shape with other thresholds misses the source key and
 * finds, or not, the same IR.  Whatever the cache holds, results equal
 * the interpreter's bit for bit.  A full cache drops its least recently
 * used entry; a disabled one stores nothing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "silvan/code_cache.h"
#include "silvan/compile_image.h"
#include "silvan/compiler.h"
#include "silvan/hir.h"
#include "silvan/jit.h"
#include "silvan/jit_split.h"
#include "silvan/parse.h"
#include "silvan/runtime.h"
#include "silvan/sha256.h"
#include "unit.h"

#define NUM_ROWS 100

/* Damage positions relative to each file's size */
#define CUT_HALF		(-2)
#define FROM_END(n)		(-1000 - (long) (n))

static char cache_dir[] = "/tmp/silvan-code-cache-XXXXXX";

/* The number of entries, and the path of entry i (if paths) */
static int
ListEntries(char (*paths)[4096], int max_paths, char *last, size_t size)
{
	DIR		   *dir = opendir(cache_dir);
	struct dirent *de;
	int			n = 0;

	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL)
		if (strstr(de->d_name, ".o") != NULL && strlen(de->d_name) == 18)
		{
			if (last)
				snprintf(last, size, "%s/%s", cache_dir, de->d_name);
			if (n < max_paths)
				snprintf(paths[n], sizeof(paths[n]), "%s/%s", cache_dir, de->d_name);
			n++;
		}
	closedir(dir);
	return n;
}

/* The number of entries in the cache directory, and the path of the last one */
static int
CountEntries(char *last, size_t size)
{
	return ListEntries(NULL, 0, last, size);
}

/* SHA-256 against FIPS 180-2's examples, whole and fed in uneven pieces */
static void
TestSha256Cases(const char *path)
{
	static const struct
	{
		const char *text;
		int			repeat;
		const char *digest;
	}			cases[] = {
		{"", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		size_t		len = strlen(cases[i].text) * (size_t) cases[i].repeat;
		char	   *data = malloc(len + 1);
		char		hex[2 * SHA256_DIGEST_LEN + 1];
		uint8_t		digest[SHA256_DIGEST_LEN];
		Sha256		sha;
		size_t		done = 0;

		for (int r = 0; r < cases[i].repeat; r++)
			memcpy(data + r * strlen(cases[i].text), cases[i].text, strlen(cases[i].text));
		Sha256Hex(data, len, hex);
		CHECK_MSG(strcmp(hex, cases[i].digest) == 0, "sha256 (%s) case %zu: %s", path, i, hex);
		Sha256Init(&sha);
		for (size_t piece = 1; done < len; piece = piece * 3 + 1)
		{
			size_t		n = piece < len - done ? piece : len - done;

			Sha256Update(&sha, data + done, n);
			done += n;
		}
		Sha256Final(&sha, digest);
		for (int b = 0; b < SHA256_DIGEST_LEN; b++)
			snprintf(hex + 2 * b, 3, "%02x", digest[b]);
		CHECK_MSG(strcmp(hex, cases[i].digest) == 0, "sha256 (%s) case %zu in pieces: %s",
				  path, i, hex);
		free(data);
	}
}

/* SHA-256 in plain C, and with the CPU's SHA extensions where it has them */
static void
TestSha256(void)
{
	(void) Sha256UseAccelerated(false);
	TestSha256Cases("plain C");
	if (Sha256UseAccelerated(true))
		TestSha256Cases("SHA-NI");
	else
		printf("# this CPU has no SHA extensions: only plain C SHA-256 was tested\n");
}

/*
 * A forest read from its binary form carries that form's digest; the copy
 * HirNormalizeCompares rewrites does not (its nodes are no longer the
 * form's), so no key is ever made from a stale digest
 */
static void
TestDigests(const Forest *parsed)
{
	SilvanStatus status;
	uint8_t    *data = NULL;
	size_t		size = 0;
	Forest	   *read;
	Forest	   *normalized = NULL;
	char		hex[2 * SHA256_DIGEST_LEN + 1];

	CHECK(parsed->digest[0] == '\0');
	if (!ForestSerialize(parsed, &data, &size, &status))
	{
		CHECK_MSG(false, "serialize: %s", status.detail);
		return;
	}
	read = ForestDeserialize(data, size, &status);
	Sha256Hex(data, size, hex);
	CHECK(read != NULL && strcmp(read->digest, hex) == 0);
	if (read != NULL)
	{
		for (int64_t n = 0; n < read->num_nodes; n++)
			if (read->nodes[n].kind == FOREST_NODE_NUMERIC)
			{
				read->nodes[n].compare = FOREST_CMP_GE;	/* a split normalizing rewrites */
				break;
			}
		CHECK(HirNormalizeCompares(read, &normalized, &status) && normalized != NULL);
		CHECK_MSG(normalized == NULL || normalized->digest[0] == '\0',
				  "the normalized copy kept the digest of a form its nodes no longer match");
		HirFreeNormalized(normalized);
	}
	ForestFree(read);
	free(data);
}

/* Remove every file of the cache directory */
static void
RemoveEntries(void)
{
	DIR		   *dir = opendir(cache_dir);
	struct dirent *de;
	char		path[4200];

	while (dir && (de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
		{
			snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
			unlink(path);
		}
	if (dir)
		closedir(dir);
}

/* Does the entry file at path hold an image (its key is an image key)? */
static bool
IsImageEntry(const char *path)
{
	static const char prefix[] = "silvan image key\n";
	size_t		len;
	char	   *data = ReadFile(path, &len);
	bool		image = data != NULL && len > 36 + strlen(prefix) &&
		memcmp(data + 36, prefix, strlen(prefix)) == 0;

	free(data);
	return image;
}

/* The path of the cache's image entry, or "" */
static void
FindImageEntry(char *path, size_t size)
{
	char		paths[8][4096];
	int			n = ListEntries(paths, 8, NULL, 0);

	path[0] = '\0';
	for (int i = 0; i < n && i < 8; i++)
		if (IsImageEntry(paths[i]))
			snprintf(path, size, "%.4000s", paths[i]);
}

/* A compile's explain text without its timing line and the line saying no pass ran */
static char *
ExplainWithoutTiming(const CompiledForest *compiled)
{
	char	   *text = CompiledForestExplain(compiled, false);
	char	   *out = text ? malloc(strlen(text) + 1) : NULL;
	char	   *o = out;

	if (out == NULL)
	{
		free(text);
		return NULL;
	}
	for (char *line = text; *line;)
	{
		char	   *end = strchr(line, '\n');
		size_t		n = end ? (size_t) (end - line + 1) : strlen(line);

		if (strncmp(line, "compile time:", 13) != 0 && strncmp(line, "passes:", 7) != 0)
		{
			memcpy(o, line, n);
			o += n;
		}
		line += n;
	}
	*o = '\0';
	free(text);
	return out;
}

/* Did this compile take its buffers from the code cache's image? */
static bool
RanNoPass(const CompiledForest *compiled)
{
	char	   *text = CompiledForestExplain(compiled, false);
	bool		none = text != NULL && strstr(text, "\npasses: none ran") != NULL;

	free(text);
	return none;
}

/*
 * An image read back from any prefix of itself, or with a count that its
 * buffer cannot hold, is refused (and nothing leaks or crashes: valgrind
 * and ASan runs of this test say so)
 */
static void
TestImageReads(const char *path)
{
	size_t		len;
	char	   *file = ReadFile(path, &len);
	uint64_t	key_len = 0;
	uint8_t    *payload;
	size_t		size;
	CompileImage image;
	int			accepted = 0;
	size_t		num_nodes_at;
	size_t		code_splits_at;
	int64_t		huge = INT64_C(1) << 40;
	int64_t		negative = -1;
	uint8_t		saved[sizeof(int64_t)];

	if (file == NULL || len < 36)
	{
		CHECK_MSG(false, "no image entry to read");
		free(file);
		return;
	}
	memcpy(&key_len, file + 12, sizeof(key_len));
	/* the object starts at the next multiple of 64 after the header and key */
	payload = (uint8_t *) file + ((36 + key_len + 63) & ~(uint64_t) 63);
	size = len - (size_t) (payload - (uint8_t *) file);
	CHECK_MSG(CompileImageRead(payload, size, false, &image), "the stored image does not read back");
	CHECK(!image.buffers.borrowed);
	ReprBuffersFree(&image.buffers);
	free(image.hir_text);
	free(image.mir_text);
	/* in place: the buffers are the image's bytes where they lie 64-byte aligned, else copies */
	{
		uint8_t    *aligned = aligned_alloc(64, (size + 64 + 63) & ~(size_t) 63);

		for (int shift = 0; shift < 2; shift++)
		{
			memcpy(aligned + shift, payload, size);
			CHECK(CompileImageRead(aligned + shift, size, true, &image));
			CHECK(image.buffers.borrowed == (shift == 0));
			CHECK(image.buffers.nodes != NULL &&
				  ((uint8_t *) image.buffers.nodes >= aligned + shift &&
				   (uint8_t *) image.buffers.nodes < aligned + shift + size) == (shift == 0));
			CHECK(shift != 0 || (uintptr_t) image.buffers.nodes % 64 == 0);
			ReprBuffersFree(&image.buffers);
			free(image.hir_text);
			free(image.mir_text);
		}
		free(aligned);
	}
	for (size_t cut = 0; cut < size; cut++)
		for (int in_place = 0; in_place < 2; in_place++)
			if (CompileImageRead(payload, cut, in_place, &image))
			{
				accepted++;
				ReprBuffersFree(&image.buffers);
				free(image.hir_text);
				free(image.mir_text);
			}
	CHECK_MSG(accepted == 0, "%d prefixes of an image were accepted", accepted);
	/*
	 * the splits in code follow magic, two u32, i32, u32 and two u8; then
	 * the code's size estimated and counted, then the struct
	 */
	code_splits_at = 8 + 4 + 4 + 4 + 4 + 2;
	num_nodes_at = code_splits_at + 8 + 2 * IMAGE_COST_FIELDS * 8 + offsetof(ReprBuffers, num_nodes);
	memcpy(saved, payload + num_nodes_at, sizeof(saved));
	memcpy(payload + num_nodes_at, &huge, sizeof(huge));
	CHECK_MSG(!CompileImageRead(payload, size, false, &image),
			  "an image whose node count its buffer cannot hold was accepted");
	memcpy(payload + num_nodes_at, saved, sizeof(saved));
	memcpy(payload + code_splits_at, &negative, sizeof(negative));
	CHECK_MSG(!CompileImageRead(payload, size, false, &image),
			  "an image with a negative count of splits in code was accepted");
	free(file);
}

/* Compile with a schedule's text; check the origin and the margins against the interpreter */
static CompiledForest *
CompileAndCheck(const Forest *forest, const char *schedule_text, const float *rows,
				const char *want_origin, const char *label)
{
	SilvanStatus status;
	Schedule	schedule;
	CompiledForest *compiled;
	float		want[NUM_ROWS];
	float		got[NUM_ROWS];

	if (!ScheduleParse(schedule_text, &schedule, &status))
	{
		CHECK_MSG(false, "%s: schedule: %s", label, status.detail);
		return NULL;
	}
	compiled = CompileForest(forest, &schedule, NULL, &status);
	CHECK_MSG(compiled != NULL, "%s: %s: %s", label, status.message, status.detail);
	if (compiled == NULL)
		return NULL;
	CHECK_MSG(strcmp(CompiledForestCodeOrigin(compiled), want_origin) == 0,
			  "%s: machine code %s, expected %s", label, CompiledForestCodeOrigin(compiled),
			  want_origin);
	ForestMarginsInit(forest, want, NUM_ROWS);
	ForestMarginsInit(forest, got, NUM_ROWS);
	ForestInterpretAccumulate(forest, rows, NUM_ROWS, want);
	CompiledForestAccumulate(compiled, rows, NUM_ROWS, got);
	CHECK_MSG(memcmp(want, got, sizeof(want)) == 0, "%s: margins differ from the interpreter", label);
	return compiled;
}

/*
 * Code emitted in two halves (jit_split.c; split from any size here): two
 * objects, linked together, stored as one entry and loaded back together,
 * and the margins still the interpreter's; on one thread the module stays
 * whole
 */
static void
TestSplitCode(const Forest *forest, const float *rows)
{
	const char *bits = "tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1); "
		"codeWalk(b1, 63, bitvector)";
	CompiledForest *a;

	RemoveEntries();
	JitSplitSetMinInstructions(1);
	RuntimeSetMaxThreads(2);
	a = CompileAndCheck(forest, bits, rows, "compiled on two threads", "split");
	CompiledForestFree(a);
	CHECK_MSG(CountEntries(NULL, 0) == 3, "%d entries after a split compile",
			  CountEntries(NULL, 0));
	a = CompileAndCheck(forest, bits, rows, "from the code cache", "split, loaded back");
	CHECK_MSG(a == NULL || CompiledForestCodeObjects(a) == 2,
			  "split code loaded back as %d objects", a ? CompiledForestCodeObjects(a) : 0);
	CompiledForestFree(a);
	RemoveEntries();
	RuntimeSetMaxThreads(1);
	a = CompileAndCheck(forest, bits, rows, "compiled", "one thread");
	CompiledForestFree(a);
	RemoveEntries();
	RuntimeSetMaxThreads(RuntimeCoreCount());
	JitSplitSetMinInstructions(0);
}

/* A forest of num_trees complete trees of depth 6 (63 splits each) */
static Forest *
CompleteForest(int32_t num_trees, int32_t num_features)
{
	SilvanStatus status;
	Forest	   *forest = ForestCreate(&status);
	int32_t		per_tree = 127;

	forest->source = FOREST_SOURCE_XGBOOST;
	forest->precision = FOREST_FLOAT32;
	forest->num_features = num_features;
	forest->num_classes = 1;
	ForestAllocBaseMargin(forest, 1, &status);
	ForestAllocTrees(forest, num_trees, &status);
	ForestAllocNodes(forest, (int64_t) num_trees * per_tree, &status);
	for (int32_t t = 0; t < num_trees; t++)
	{
		forest->trees[t].first_node = (int64_t) t * per_tree;
		forest->trees[t].num_nodes = per_tree;
		for (int32_t i = 0; i < per_tree; i++)
		{
			ForestNode *node = &forest->nodes[(int64_t) t * per_tree + i];

			memset(node, 0, sizeof(ForestNode));
			node->kind = 2 * i + 1 < per_tree ? FOREST_NODE_NUMERIC : FOREST_NODE_LEAF;
			node->feature = node->kind == FOREST_NODE_LEAF ? -1 : (i + t) % num_features;
			node->left = node->kind == FOREST_NODE_LEAF ? -1 : 2 * i + 1;
			node->right = node->kind == FOREST_NODE_LEAF ? -1 : 2 * i + 2;
			node->threshold = (double) ((i * 7 + t) % 17) / 4.0 - 2.0;
			node->leaf_value = (double) ((i + t) % 9) / 16.0;
		}
	}
	ForestAllocCategoryWords(forest, 0, &status);
	if (!ForestValidate(forest, &status))
	{
		ForestFree(forest);
		return NULL;
	}
	return forest;
}

/*
 * How finely a pipelined batch may be split (CompiledForestSplitRows) is
 * the same for code from the code cache, found by the catalog's header
 * alone, as for the compile that stored it: a forest of 25,200 splits in
 * code takes ranges of 256 rows, a small one of 64
 */
static void
TestSplitRowsKept(const Forest *small, const float *rows)
{
	const char *bits = "tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1); "
		"codeWalk(b1, 63, bitvector)";
	Forest	   *big = CompleteForest(400, small->num_features);
	SilvanStatus status;
	Schedule	schedule;
	uint8_t    *data = NULL;
	size_t		size = 0;
	int64_t		stored_nodes;
	Forest	   *header = NULL;
	CompiledForest *compiled;

	CHECK(big != NULL && ScheduleParse(bits, &schedule, &status));
	if (big == NULL)
		return;
	RemoveEntries();
	RuntimeSetMaxThreads(1);	/* one object: "compiled" */
	compiled = CompileAndCheck(small, bits, rows, "compiled", "small forest in code");
	CHECK(compiled != NULL && CompiledForestSplitRows(compiled) == 64);
	CompiledForestFree(compiled);
	compiled = CompileAndCheck(big, bits, rows, "compiled", "25,200 splits in code");
	CHECK_MSG(compiled != NULL && CompiledForestSplitRows(compiled) == 256,
			  "25,200 splits in code split by %lld rows",
			  compiled ? (long long) CompiledForestSplitRows(compiled) : -1LL);
	CompiledForestFree(compiled);
	if (ForestSerialize(big, &data, &size, &status))
		header = ForestDeserializeHeader(data, size, &stored_nodes, &status);
	compiled = header ? CompileForestFromCache(header, &schedule, NULL, NULL) : NULL;
	CHECK_MSG(compiled != NULL && CompiledForestSplitRows(compiled) == 256,
			  "25,200 splits in code, from the code cache by the header: split by %lld rows",
			  compiled ? (long long) CompiledForestSplitRows(compiled) : -1LL);
	CompiledForestFree(compiled);
	ForestFree(header);
	free(data);
	ForestFree(big);
	RemoveEntries();
	RuntimeSetMaxThreads(RuntimeCoreCount());
}

/*
 * Code walks read their thresholds and leaves from the code constants
 * (aux[REPR_AUX_CODE_CONSTANTS]), not from immediates: a second model of
 * the same shape with other thresholds and leaves gets the same LLVM IR,
 * so the first model's machine code, and must still predict its own
 * values (as its interpreter does) through its own constants
 */
static void
TestCodeConstants(const Forest *forest, const float *rows)
{
	const char *schedule = "tile(batch, b0, b1, 16); reorder(b0, b1, tree); specialize(tree); "
		"codeWalk(tree, 6, branchy)";
	SilvanStatus status;
	uint8_t    *data;
	size_t		size;
	Forest	   *other = NULL;
	CompiledForest *a;
	CompiledForest *b;
	const ReprBuffers *buffers;

	if (ForestSerialize(forest, &data, &size, &status))
	{
		other = ForestDeserialize(data, size, &status);
		free(data);
	}
	CHECK(other != NULL);
	if (other == NULL)
		return;
	for (int64_t n = 0; n < other->num_nodes; n++)
	{
		ForestNode *node = &other->nodes[n];

		if (node->kind == FOREST_NODE_LEAF)
			node->leaf_value *= 2;
		else if (node->kind == FOREST_NODE_NUMERIC)
			node->threshold = (double) (float) (node->threshold + 0.25);
	}
	other->digest[0] = '\0';
	a = CompileAndCheck(forest, schedule, rows, "compiled", "code constants, first model");
	buffers = a ? CompiledForestBuffers(a) : NULL;
	CHECK_MSG(buffers && buffers->aux_count[REPR_AUX_CODE_CONSTANTS] > 0 &&
			  buffers->bytes[REPR_BUFFER_AUX0 + REPR_AUX_CODE_CONSTANTS] ==
			  (size_t) buffers->aux_count[REPR_AUX_CODE_CONSTANTS] * 8,
			  "a code walk has no code constants");
	b = CompileAndCheck(other, schedule, rows, "shared with an earlier compile",
						"code constants, second model");
	CompiledForestFree(b);
	CompiledForestFree(a);
	ForestFree(other);
}

/*
 * What a backend does when the catalog's form of a model is all it has:
 * the header alone finds the compile and the default schedule an earlier
 * compile of the whole form left in the code cache, and its code predicts
 * as the interpreter on the whole forest; a model never compiled finds
 * nothing (the caller then reads the trees)
 */
static void
TestHeaderOnly(const Forest *parsed, const float *rows)
{
	SilvanStatus status;
	uint8_t    *data = NULL;
	size_t		size = 0;
	int64_t		stored_nodes;
	Forest	   *whole;
	Forest	   *header;
	Schedule	picked;
	Schedule	remembered;
	CompiledForest *compiled;
	char	   *a;
	char	   *b;

	if (!ForestSerialize(parsed, &data, &size, &status))
	{
		CHECK_MSG(false, "serialize: %s", status.detail);
		return;
	}
	whole = ForestDeserialize(data, size, &status);
	header = ForestDeserializeHeader(data, size, &stored_nodes, &status);
	CHECK(whole != NULL && header != NULL);
	if (whole == NULL || header == NULL)
		goto done;
	CHECK_MSG(!ScheduleDefaultFromCache(header, 77, NULL, &remembered),
			  "a default schedule nobody remembered was found");
	ScheduleDefault(whole, 77, NULL, &picked);
	CHECK_MSG(CompileForestFromCache(header, &picked, NULL, NULL) == NULL,
			  "the header found a compile nobody made");
	ScheduleDefaultRemember(header, 77, NULL, &picked);
	CHECK_MSG(ScheduleDefaultFromCache(header, 77, NULL, &remembered),
			  "the remembered default schedule was not found");
	a = ScheduleToText(&picked);
	b = ScheduleToText(&remembered);
	CHECK_MSG(a && b && strcmp(a, b) == 0, "remembered %s, picked %s", b ? b : "", a ? a : "");
	free(a);
	free(b);
	CHECK_MSG(!ScheduleDefaultFromCache(header, 78, NULL, &remembered),
			  "another batch size's default schedule was found");
	compiled = CompileForest(whole, &picked, NULL, &status);
	CHECK_MSG(compiled != NULL, "whole: %s", status.detail);
	CompiledForestFree(compiled);
	compiled = CompileForestFromCache(header, &picked, NULL, NULL);
	CHECK_MSG(compiled != NULL, "the header did not find the whole form's compile");
	if (compiled != NULL)
	{
		float		want[NUM_ROWS];
		float		got[NUM_ROWS];

		CHECK(RanNoPass(compiled));
		ForestMarginsInit(whole, want, NUM_ROWS);
		ForestMarginsInit(header, got, NUM_ROWS);
		ForestInterpretAccumulate(whole, rows, NUM_ROWS, want);
		CompiledForestAccumulate(compiled, rows, NUM_ROWS, got);
		CHECK_MSG(memcmp(want, got, sizeof(want)) == 0,
				  "the header's compile differs from the interpreter on the whole forest");
		CompiledForestFree(compiled);
	}
done:
	ForestFree(whole);
	ForestFree(header);
	free(data);
}

/* Rewrite a file: keep its first keep bytes, then change byte at (if >= 0), then append extra */
static void
DamageFile(const char *path, long keep, long at, const char *extra)
{
	size_t		len;
	char	   *data = ReadFile(path, &len);
	FILE	   *f;

	if (data == NULL)
		return;
	if (keep < 0 || (size_t) keep > len)
		keep = (long) len;
	if (at >= 0 && at < keep)
		data[at] ^= 0x5a;
	f = fopen(path, "wb");
	if (f)
	{
		fwrite(data, 1, (size_t) keep, f);
		if (extra)
			fwrite(extra, 1, strlen(extra), f);
		fclose(f);
	}
	free(data);
}

/* Overwrite the 8-byte little-endian field at offset with value */
static void
PatchLength(const char *path, long offset, uint64_t value)
{
	int			fd = open(path, O_WRONLY);
	unsigned char bytes[8];

	for (int i = 0; i < 8; i++)
		bytes[i] = (unsigned char) (value >> (8 * i));
	if (fd >= 0)
	{
		if (pwrite(fd, bytes, 8, offset) != 8)
			unit_failed++;
		close(fd);
	}
}

/* Bytes the entry files of the cache directory take */
static int64_t
EntryBytes(void)
{
	DIR		   *dir = opendir(cache_dir);
	struct dirent *de;
	int64_t		total = 0;
	char		path[1024];
	struct stat st;

	while (dir != NULL && (de = readdir(dir)) != NULL)
	{
		snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
		if (strstr(de->d_name, ".o") != NULL && stat(path, &st) == 0)
			total += st.st_size;
	}
	if (dir != NULL)
		closedir(dir);
	return total;
}

/*
 * The cache's byte budget: entries past it push out the least recently
 * used, and an entry over the cap of one entry is never stored
 */
static void
TestByteBudget(void)
{
	char		key[32];
	char	   *object = calloc(1, 300000);
	size_t		len;
	void	   *loaded;

	RemoveEntries();
	CodeCacheConfigure(cache_dir, 1000);
	CodeCacheSetBudget(1000000, 280000);
	for (int k = 0; k < 10; k++)
	{
		snprintf(key, sizeof(key), "budget key %d", k);
		CodeCacheStore(key, strlen(key), object, 250000);
		CHECK_MSG(EntryBytes() <= 1000000, "%lld bytes for a budget of 1000000",
				  (long long) EntryBytes());
	}
	CHECK_MSG(CountEntries(NULL, 0) == 3, "%d entries of 250 kB in 1 MB", CountEntries(NULL, 0));
	loaded = CodeCacheLoad("budget key 9", 12, &len);
	CHECK(loaded != NULL && len == 250000);	/* the newest stays */
	free(loaded);
	CHECK(CodeCacheLoad("budget key 0", 12, &len) == NULL);	/* the oldest went */
	/* over the cap of one entry: not stored, nothing pushed out */
	CodeCacheStore("too big", 7, object, 300000);
	CHECK(CodeCacheLoad("too big", 7, &len) == NULL);
	CHECK(CountEntries(NULL, 0) == 3);
	CodeCacheSetBudget(0, 0);
	RemoveEntries();
	free(object);
}

/*
 * An entry mapped where it lies (CodeCacheMap): the stored bytes, 64-byte
 * aligned, private; a changed byte, a changed key or no entry is a miss
 */
static void
TestMapped(void)
{
	char		path[4096];
	unsigned char object[1000];
	CodeCacheView view;
	FILE	   *f;

	RemoveEntries();
	CodeCacheConfigure(cache_dir, 1000);
	for (int i = 0; i < (int) sizeof(object); i++)
		object[i] = (unsigned char) (i * 7);
	for (int key_len = 5; key_len < 9; key_len++)
	{
		CodeCacheStore("mapped key", key_len, object, sizeof(object));
		CHECK(CodeCacheMap("mapped key", key_len, &view));
		CHECK(view.len == sizeof(object) && view.data != NULL &&
			  memcmp(view.data, object, sizeof(object)) == 0);
		CHECK((uintptr_t) view.data % 64 == 0);
		view.data[0] ^= 1;		/* private: the file keeps its bytes */
		CodeCacheUnmap(&view);
		CHECK(view.base == NULL);
		CHECK(CodeCacheMap("mapped key", key_len, &view) && view.data[0] == object[0]);
		CodeCacheUnmap(&view);
	}
	CHECK(!CodeCacheMap("mapped kez", 10, &view) && view.base == NULL);
	CHECK(!CodeCacheMap("never stored", 12, &view));
	/* flip the object's last byte on disk: the checksum no longer matches */
	snprintf(path, sizeof(path), "%s/%016llx.o", cache_dir,
			 (unsigned long long) CodeCacheHash("mapped key", 8));
	if ((f = fopen(path, "r+b")) != NULL)
	{
		fseek(f, -1, SEEK_END);
		fputc(0xff, f);
		fclose(f);
	}
	CHECK(!CodeCacheMap("mapped key", 8, &view) && view.base == NULL);
	RemoveEntries();
}

int
main(void)
{
	SilvanStatus status;
	size_t		len = 0;
	char	   *text = ReadFile("test/fixtures/binary_logistic.json", &len);
	Forest	   *forest = text ? ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status) : NULL;
	float	   *rows;
	CompiledForest *a,
			   *b;
	char		entry[4096] = "";
	const char *schedule = "tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)";
	struct stat st;

	TestSha256();
	CHECK_MSG(BuildIdOfThisCode()[0] != '\0', "this binary has no build ID: no source keys");
	CHECK(forest != NULL);
	if (forest != NULL)
		TestDigests(forest);
	if (forest == NULL || mkdtemp(cache_dir) == NULL)
		UNIT_DONE();
	rows = malloc(sizeof(float) * NUM_ROWS * forest->num_features);
	for (int i = 0; i < NUM_ROWS * forest->num_features; i++)
		rows[i] = (float) ((i * 7919 % 1000) / 250.0 - 2.0);
	CodeCacheConfigure(cache_dir, 16);

	/* compiled once, shared while alive, then loaded from disk by its source key */
	a = CompileAndCheck(forest, schedule, rows, "compiled", "first compile");
	CHECK_MSG(CountEntries(entry, sizeof(entry)) == 3,
			  "%d entries after one compile: expected the code by IR and by source, and the image",
			  CountEntries(NULL, 0));
	CHECK_MSG(!RanNoPass(a), "the first compile says no pass ran");
	{
		char	   *compiled_text = ExplainWithoutTiming(a);
		char	   *cached_text;

		b = CompileAndCheck(forest, schedule, rows, "shared with an earlier compile",
							"second compile");
		CHECK_MSG(RanNoPass(b), "a compile whose code and image are cached ran the passes");
		CompiledForestFree(b);
		CompiledForestFree(a);
		a = CompileAndCheck(forest, schedule, rows, "from the code cache", "after both were freed");
		CHECK_MSG(RanNoPass(a), "a compile from the code cache ran the passes");
		cached_text = ExplainWithoutTiming(a);
		CHECK_MSG(compiled_text && cached_text && strcmp(compiled_text, cached_text) == 0,
				  "explained from the image:\n%s\nexplained when compiled:\n%s",
				  cached_text ? cached_text : "", compiled_text ? compiled_text : "");
		free(compiled_text);
		free(cached_text);
	}
	b = CompileAndCheck(forest, schedule, rows, "shared with an earlier compile",
						"found by source while loaded");
	CompiledForestFree(b);
	CompiledForestFree(a);

	/* a damaged image is refused whole: the passes run, the code is still found, the image stored again */
	{
		char		image_path[4096];

		FindImageEntry(image_path, sizeof(image_path));
		CHECK_MSG(image_path[0] != '\0', "no image entry in the cache");
		if (image_path[0] != '\0')
		{
			TestImageReads(image_path);
			DamageFile(image_path, 60, -1, NULL);
			/* the passes run again (codegen also makes the code constants); the code is found by IR */
			a = CompileAndCheck(forest, schedule, rows, "from the code cache by its llvm ir",
								"image cut short");
			CHECK_MSG(!RanNoPass(a), "a compile with a damaged image says no pass ran");
			CompiledForestFree(a);
			a = CompileAndCheck(forest, schedule, rows, "from the code cache", "image stored again");
			CHECK_MSG(RanNoPass(a), "the image was not stored again after the damaged one");
			CompiledForestFree(a);
		}
	}

	/* every kind of damage is a miss; the compile stores good entries again */
	{
		struct
		{
			const char *label;
			long		keep;
			long		at;
			const char *extra;
			long		length_at;	/* >= 0: patch this length field instead */
			uint64_t	length;
		}			damage[] = {
			{"cut short", CUT_HALF, -1, NULL, -1, 0},
			{"object byte changed", -1, FROM_END(10), NULL, -1, 0},
			{"key byte changed", -1, 40, NULL, -1, 0},
			{"a byte added", -1, -1, "x", -1, 0},
			{"wrong magic", -1, 3, NULL, -1, 0},
			{"header only", 36, -1, NULL, -1, 0},
			{"empty", 0, -1, NULL, -1, 0},
			{"object length lies", -1, -1, NULL, 20, UINT64_MAX / 2},
			{"key length lies", -1, -1, NULL, 12, 5},
		};

		for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++)
		{
			char		paths[3][4096];
			int			n = ListEntries(paths, 3, NULL, 0);

			CHECK_MSG(n == 3, "%s: %d entries before the damage", damage[i].label, n);
			for (int e = 0; e < n && e < 3; e++)
			{
				long		size = stat(paths[e], &st) == 0 ? (long) st.st_size : 0;

				if (damage[i].length_at >= 0)
					PatchLength(paths[e], damage[i].length_at, damage[i].length);
				else
					DamageFile(paths[e], damage[i].keep == CUT_HALF ? size / 2 : damage[i].keep,
							   damage[i].at <= FROM_END(0) ? size + damage[i].at - FROM_END(0) :
							   damage[i].at, damage[i].extra);
			}
			a = CompileAndCheck(forest, schedule, rows, "compiled", damage[i].label);
			CompiledForestFree(a);
			a = CompileAndCheck(forest, schedule, rows, "from the code cache", damage[i].label);
			CompiledForestFree(a);
		}
	}

	/*
	 * The same shape with another threshold: its source key differs, so
	 * it is never given the first model's code.  A lock-step walk reads
	 * thresholds from buffers, so its IR is the same and is found by it; a
	 * code walk has thresholds in its code, so it is compiled.
	 */
	{
		Forest	   *other = ParseModel(text, len, MODEL_FORMAT_AUTO, NULL, &status);
		const char *code_walk = "tile(batch, b0, b1, 8); reorder(b0, b1, tree); "
			"specialize(tree); codeWalk(tree, 4, branchy)";

		CHECK(other != NULL);
		for (int64_t n = 0; other != NULL && n < other->num_nodes; n++)
			if (other->nodes[n].kind == FOREST_NODE_NUMERIC)
			{
				other->nodes[n].threshold = (float) (other->nodes[n].threshold + 0.75);
				break;
			}
		if (other != NULL)
		{
			float		mine[NUM_ROWS];
			float		theirs[NUM_ROWS];

			ForestMarginsInit(forest, mine, NUM_ROWS);
			ForestMarginsInit(other, theirs, NUM_ROWS);
			ForestInterpretAccumulate(forest, rows, NUM_ROWS, mine);
			ForestInterpretAccumulate(other, rows, NUM_ROWS, theirs);
			CHECK_MSG(memcmp(mine, theirs, sizeof(mine)) != 0,
					  "the changed threshold changes no prediction: the test proves nothing");
		}
		a = CompileAndCheck(forest, code_walk, rows, "compiled", "code walk");
		CompiledForestFree(a);
		if (other != NULL)
		{
			a = CompileAndCheck(other, schedule, rows, "from the code cache by its llvm ir",
								"other thresholds, lock-step walk");
			CompiledForestFree(a);
			a = CompileAndCheck(other, code_walk, rows, "compiled", "other thresholds, code walk");
			CompiledForestFree(a);
			a = CompileAndCheck(other, code_walk, rows, "from the code cache",
								"other thresholds, code walk again");
			CompiledForestFree(a);
		}
		a = CompileAndCheck(forest, code_walk, rows, "from the code cache", "first thresholds again");
		CompiledForestFree(a);
		ForestFree(other);
	}

	TestHeaderOnly(forest, rows);
	TestSplitCode(forest, rows);
	TestSplitRowsKept(forest, rows);

	/* a full cache drops its least recently used entry */
	RemoveEntries();
	CodeCacheConfigure(cache_dir, 2);
	for (int size = 2; size <= 5; size++)
	{
		char		other[128];

		snprintf(other, sizeof(other), "tile(batch, b0, b1, %d); reorder(b0, tree, b1)", size);
		a = CompileAndCheck(forest, other, rows, "compiled", other);
		CompiledForestFree(a);
		CHECK_MSG(CountEntries(NULL, 0) <= 2, "%d entries for a cache of 2", CountEntries(NULL, 0));
	}

	TestByteBudget();
	TestMapped();

	/* a disabled cache neither loads nor stores */
	CodeCacheConfigure(NULL, 0);
	a = CompileAndCheck(forest, "tile(batch, b0, b1, 5); reorder(b0, tree, b1)", rows, "compiled",
						"cache disabled");
	CompiledForestFree(a);
	a = CompileAndCheck(forest, "tile(batch, b0, b1, 6); reorder(b0, tree, b1)", rows, "compiled",
						"cache disabled, new code");
	CompiledForestFree(a);
	CHECK(CountEntries(NULL, 0) <= 2);

	/* code constants: found by IR without a cache, in this process */
	TestCodeConstants(forest, rows);

	RemoveEntries();
	rmdir(cache_dir);
	free(rows);
	free(text);
	ForestFree(forest);
	UNIT_DONE();
}
