/*
 * compile_image.h
 *		What a compile built besides machine code, as bytes (compile_image.c).
 *
 * The code cache keeps, beside the machine code made from a model, profile
 * and schedule, an image of the representation buffers that code reads and
 * of the explain text of each level.  A backend that finds both by source
 * runs none of the passes.
 */
#ifndef SILVAN_COMPILE_IMAGE_H
#define SILVAN_COMPILE_IMAGE_H

#include "silvan/repr.h"

#define IMAGE_COST_FIELDS	4

typedef struct CompileImage
{
	ReprBuffers buffers;		/* record_of is never part of an image */
	int32_t		num_groups;
	uint32_t	value_size;
	uint8_t		aggregate;
	bool		needs_partials;
	int64_t		code_splits;	/* splits compiled into code (codeWalk) */
	/*
	 * the code's size, estimated and counted (CompileCost: instructions,
	 * loops, largest function's instructions, most loops in a function)
	 */
	int64_t		estimated[IMAGE_COST_FIELDS];
	int64_t		counted[IMAGE_COST_FIELDS];
	char	   *hir_text;
	char	   *mir_text;
} CompileImage;

extern bool CompileImageWrite(const CompileImage *image, uint8_t **data, size_t *size);
extern bool CompileImageRead(const uint8_t *data, size_t size, bool in_place,
							 CompileImage *image);

#endif							/* SILVAN_COMPILE_IMAGE_H */
