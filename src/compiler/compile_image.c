/*
 * compile_image.c
 *		A compile's representation buffers and explain text as bytes, kept
 *		in the code cache beside its machine code.
 *
 * A fresh backend that finds a model's machine code by source (jit.c)
 * would otherwise rebuild everything that code reads: the HIR, the
 * tiling, the representation buffers, the MIR and their explain text, a
 * noticeable part of a large model's first prediction.  The image is
 * stored under the same source key (with its own prefix), so it belongs to
 * exactly the machine code of that key: the buffers are the very bytes the
 * code was compiled against, not a rebuild that must come out the same.
 *
 * Layout (host byte order, like the objects beside it; the key holds the
 * build ID, so the writer had this very ReprBuffers struct):
 *
 *   "SLVIMG3\n", u32 sizeof(ReprBuffers), u32 REPR_NUM_BUFFERS
 *   i32 num_groups, u32 value_size, u8 aggregate, u8 needs_partials,
 *   i64 code_splits, i64 estimated[4], i64 counted[4] (the code's size)
 *   the ReprBuffers struct (its pointers are ignored)
 *   per buffer: u64 bytes, zeros up to a multiple of 64 from the image's
 *     start, the bytes
 *   hir text, mir text: u64 length, the characters
 *
 * Reading checks every length against what is left and every count of the
 * struct against its buffer before it returns; a damaged or foreign image
 * is refused (the caller then runs the passes).  An image whose bytes lie
 * 64-byte aligned (the code cache maps its entries so) may be read in
 * place: the buffers are then the image's own bytes, borrowed, not copies,
 * and the image must outlive them.  Nothing here raises.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/compile_image.h"

#define IMAGE_MAGIC		"SLVIMG4\n"
#define IMAGE_ALIGN		64
#define IMAGE_MAGIC_LEN	8

/* A growable output buffer, or a bounds-checked input cursor */
typedef struct ImageBytes
{
	uint8_t    *data;
	size_t		size;
	size_t		pos;			/* reading: bytes consumed */
	bool		failed;
} ImageBytes;

/* Append n bytes */
static void
Put(ImageBytes *out, const void *bytes, size_t n)
{
	uint8_t    *grown;

	if (out->failed || n == 0)
		return;
	if ((grown = realloc(out->data, out->size + n)) == NULL)
	{
		out->failed = true;
		return;
	}
	out->data = grown;
	memcpy(out->data + out->size, bytes, n);
	out->size += n;
}

/* Append zeros up to a multiple of IMAGE_ALIGN bytes */
static void
PutPadding(ImageBytes *out)
{
	static const uint8_t zeros[IMAGE_ALIGN];

	if (!out->failed && out->size % IMAGE_ALIGN != 0)
		Put(out, zeros, IMAGE_ALIGN - out->size % IMAGE_ALIGN);
}

/* Skip to the next multiple of IMAGE_ALIGN bytes; fails when it overruns */
static bool
SkipPadding(ImageBytes *in)
{
	size_t		pad = in->pos % IMAGE_ALIGN ? IMAGE_ALIGN - in->pos % IMAGE_ALIGN : 0;

	if (in->failed || in->size - in->pos < pad)
		return !(in->failed = true);
	in->pos += pad;
	return true;
}

/* Consume n bytes into bytes; fails when fewer are left */
static bool
Get(ImageBytes *in, void *bytes, size_t n)
{
	if (in->failed || in->size - in->pos < n)
		return !(in->failed = true);
	memcpy(bytes, in->data + in->pos, n);
	in->pos += n;
	return true;
}

/* A length-prefixed block: its length, or fails when it overruns */
static bool
GetLength(ImageBytes *in, size_t *len)
{
	uint64_t	n = 0;

	if (!Get(in, &n, sizeof(n)) || n > in->size - in->pos)
		return !(in->failed = true);
	*len = (size_t) n;
	return true;
}

/* Image of a compile; false without memory or when a buffer's size is unknown */
bool
CompileImageWrite(const CompileImage *image, uint8_t **data, size_t *size)
{
	ImageBytes	out = {0};
	ReprBuffers buffers = image->buffers;
	uint32_t	struct_size = sizeof(ReprBuffers);
	uint32_t	num_buffers = REPR_NUM_BUFFERS;
	uint8_t		flags[2] = {image->aggregate, image->needs_partials};

	Put(&out, IMAGE_MAGIC, IMAGE_MAGIC_LEN);
	Put(&out, &struct_size, sizeof(struct_size));
	Put(&out, &num_buffers, sizeof(num_buffers));
	Put(&out, &image->num_groups, sizeof(image->num_groups));
	Put(&out, &image->value_size, sizeof(image->value_size));
	Put(&out, flags, sizeof(flags));
	Put(&out, &image->code_splits, sizeof(image->code_splits));
	Put(&out, image->estimated, sizeof(image->estimated));
	Put(&out, image->counted, sizeof(image->counted));
	Put(&out, &buffers, sizeof(buffers));
	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
	{
		void	   *p = *ReprBufferSlot(&buffers, (ReprBufferId) id);
		uint64_t	n = buffers.bytes[id];

		if ((p == NULL) != (n == 0))
			out.failed = true;	/* allocated without ReprAlloc */
		Put(&out, &n, sizeof(n));
		PutPadding(&out);
		Put(&out, p, (size_t) n);
	}
	for (int t = 0; t < 2; t++)
	{
		const char *text = t == 0 ? image->hir_text : image->mir_text;
		uint64_t	n = text ? strlen(text) : 0;

		Put(&out, &n, sizeof(n));
		Put(&out, text, (size_t) n);
	}
	if (out.failed)
	{
		free(out.data);
		return false;
	}
	*data = out.data;
	*size = out.size;
	return true;
}

/* Does a buffer of bytes hold count elements of size? */
static bool
Holds(size_t bytes, int64_t count, size_t size)
{
	return count >= 0 && (size == 0 || (uint64_t) count <= bytes / size);
}

/* Are the struct's counts within its buffers? */
static bool
CountsFit(const ReprBuffers *b)
{
	for (int i = 0; i < REPR_MAX_AUX; i++)
		if (b->aux_count[i] < 0)
			return false;
	return b->num_trees >= 0 && b->num_category_sets >= 0 &&
		Holds(b->bytes[REPR_BUFFER_NODES], b->num_nodes, b->node_size) &&
		Holds(b->bytes[REPR_BUFFER_TREES], b->num_trees, sizeof(ReprTree)) &&
		Holds(b->bytes[REPR_BUFFER_CATEGORY_WORDS], b->num_category_words, sizeof(uint32_t)) &&
		Holds(b->bytes[REPR_BUFFER_CATEGORY_SETS], b->num_category_sets,
			  sizeof(ReprCategorySet)) &&
		b->bytes[REPR_BUFFER_NODES] > 0 && b->bytes[REPR_BUFFER_TREES] > 0;
}

/* A text block, NUL-terminated (malloc'd); NULL on failure */
static char *
GetText(ImageBytes *in)
{
	size_t		n;
	char	   *text;

	if (!GetLength(in, &n) || (text = malloc(n + 1)) == NULL)
		return NULL;
	Get(in, text, n);
	text[n] = '\0';
	return text;
}

/* The buffers of an image: each copied out, sizes noted */
static bool
GetBuffers(ImageBytes *in, ReprBuffers *b)
{
	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
	{
		void	  **slot = ReprBufferSlot(b, (ReprBufferId) id);
		uint64_t	n = 0;

		if (!Get(in, &n, sizeof(n)) || !SkipPadding(in) || n > in->size - in->pos)
			return !(in->failed = true);
		if (n == 0)
			continue;
		b->bytes[id] = n;
		if (b->borrowed)
		{
			*slot = in->data + in->pos;
			in->pos += n;
		}
		else if ((*slot = malloc(n)) == NULL)
			return false;
		else
			Get(in, *slot, n);
	}
	return !in->failed;
}

/*
 * Read an image back into image (its text malloc'd, its buffers malloc'd
 * or, in_place, the image's own bytes when they are 64-byte aligned; free
 * them with ReprBuffersFree and free); false when it is damaged, not this
 * build's, or memory runs out
 */
bool
CompileImageRead(const uint8_t *data, size_t size, bool in_place, CompileImage *image)
{
	ImageBytes	in = {(uint8_t *) data, size, 0, false};
	char		magic[IMAGE_MAGIC_LEN];
	uint32_t	struct_size = 0;
	uint32_t	num_buffers = 0;
	uint8_t		flags[2] = {0, 0};
	ReprBuffers *b = &image->buffers;

	memset(image, 0, sizeof(CompileImage));
	Get(&in, magic, IMAGE_MAGIC_LEN);
	Get(&in, &struct_size, sizeof(struct_size));
	Get(&in, &num_buffers, sizeof(num_buffers));
	Get(&in, &image->num_groups, sizeof(image->num_groups));
	Get(&in, &image->value_size, sizeof(image->value_size));
	Get(&in, flags, sizeof(flags));
	Get(&in, &image->code_splits, sizeof(image->code_splits));
	Get(&in, image->estimated, sizeof(image->estimated));
	Get(&in, image->counted, sizeof(image->counted));
	if (in.failed || memcmp(magic, IMAGE_MAGIC, IMAGE_MAGIC_LEN) != 0 || image->code_splits < 0 ||
		struct_size != sizeof(ReprBuffers) || num_buffers != REPR_NUM_BUFFERS ||
		!Get(&in, b, sizeof(ReprBuffers)))
	{
		memset(image, 0, sizeof(CompileImage));
		return false;
	}
	image->aggregate = flags[0];
	image->needs_partials = flags[1] != 0;
	/* the struct's pointers are the writer's: forget them before anything can free them */
	for (int id = 0; id < REPR_NUM_BUFFERS; id++)
	{
		*ReprBufferSlot(b, (ReprBufferId) id) = NULL;
		b->bytes[id] = 0;
	}
	b->record_of = NULL;
	b->borrowed = in_place && (uintptr_t) data % IMAGE_ALIGN == 0;
	if (GetBuffers(&in, b) && CountsFit(b) &&
		(image->hir_text = GetText(&in)) != NULL &&
		(image->mir_text = GetText(&in)) != NULL &&
		!in.failed && in.pos == in.size)
		return true;
	ReprBuffersFree(b);
	free(image->hir_text);
	free(image->mir_text);
	memset(image, 0, sizeof(CompileImage));
	return false;
}
