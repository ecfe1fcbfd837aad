/*
 * tiling_shapes.c
 *		The shapes a tile of n nodes can take, and the lookup table (LUT).
 *
 * A shape is written down by its level-order code (see tiling.h): visiting
 * the slots in level order, two bits per slot say whether its left and its
 * right child are in the tile; the children so announced are numbered as
 * the next slots.  A string of 2n bits is the code of a binary tree of n
 * nodes exactly when it has n - 1 set bits and every slot it visits has
 * already been announced (slot k exists when 1 + the set bits before it
 * exceed k).  Enumerating the 4^n strings in ascending order and keeping
 * the valid ones yields every shape once, already sorted, so a shape's id
 * is its rank and a code is found again by binary search.  There are
 * Catalan(n) of them: 1430 for n = 8, found among 65536 strings.
 *
 * The edges that leave a tile are numbered left to right as a drawing of
 * the tree shows them, which is the order a depth-first walk (left first)
 * meets them.  The LUT is built edge by edge: the path from the tile root
 * to edge e fixes the outcome of every slot on it (left = 1, right = 0)
 * and leaves the others free, so e is written at every mask that agrees
 * with those fixed bits.  Each mask agrees with exactly one path.  The test
 * checks the table against a plain walk of the shape instead.
 *
 * Tables depend only on n, so each is built on first use and kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/tiling.h"

static TileShapeTable *shape_tables[TILE_MAX_SIZE + 1];

/* Number of shapes of a tile of n nodes: Catalan(n); 0 out of range */
int32_t
TileShapeCount(int32_t tile_size)
{
	int32_t		count[TILE_MAX_SIZE + 1] = {1};

	if (tile_size < 1 || tile_size > TILE_MAX_SIZE)
		return 0;
	for (int32_t n = 1; n <= tile_size; n++)
		for (int32_t left = 0; left < n; left++)
			count[n] += count[left] * count[n - 1 - left];
	return count[tile_size];
}

/* Is code the level-order code of a binary tree of n nodes? */
static bool
ShapeCodeIsValid(uint32_t code, int32_t n)
{
	int32_t		announced = 1;

	for (int32_t k = 0; k < n; k++)
	{
		if (k >= announced)
			return false;
		announced += (int32_t) ((code >> (2 * k)) & 1) +
			(int32_t) ((code >> (2 * k + 1)) & 1);
	}
	return announced == n;
}

/* Number the edges leaving the tile below slot k, left to right */
static void
ShapeNumberExits(TileShape *shape, int32_t k, int32_t *next_exit)
{
	for (int side = 0; side < 2; side++)
	{
		int32_t		child = shape->child[k][side];

		if (child >= 0)
			ShapeNumberExits(shape, child, next_exit);
		else
		{
			shape->child[k][side] = (int8_t) (-1 - *next_exit);
			shape->exit_slot[*next_exit] = (int8_t) k;
			shape->exit_side[*next_exit] = (int8_t) side;
			(*next_exit)++;
		}
	}
}

/* Fill a shape's slot children, exits and levels from its code */
static void
ShapeFill(TileShape *shape, uint16_t code, int32_t n)
{
	int32_t		level[TILE_MAX_SIZE] = {0};
	int32_t		next_slot = 1;
	int32_t		next_exit = 0;

	memset(shape, 0, sizeof(*shape));
	shape->code = code;
	shape->levels = 1;
	for (int32_t k = 0; k < n; k++)
	{
		for (int side = 0; side < 2; side++)
		{
			if ((code >> (2 * k + side)) & 1)
			{
				level[next_slot] = level[k] + 1;
				if (level[next_slot] + 1 > shape->levels)
					shape->levels = (int8_t) (level[next_slot] + 1);
				shape->child[k][side] = (int8_t) next_slot++;
			}
			else
				shape->child[k][side] = -1; /* numbered below */
		}
	}
	ShapeNumberExits(shape, 0, &next_exit);
}

/* Write the LUT row of one shape: the child each outcome mask leads to */
static void
ShapeFillLut(const TileShape *shape, int32_t n, uint8_t *row)
{
	int32_t		parent[TILE_MAX_SIZE];
	int32_t		parent_side[TILE_MAX_SIZE];

	parent[0] = -1;
	parent_side[0] = 0;
	for (int32_t k = 0; k < n; k++)
		for (int side = 0; side < 2; side++)
			if (shape->child[k][side] >= 0)
			{
				parent[shape->child[k][side]] = k;
				parent_side[shape->child[k][side]] = side;
			}

	for (int32_t e = 0; e <= n; e++)
	{
		uint32_t	care = 0;
		uint32_t	value = 0;
		int32_t		k = shape->exit_slot[e];
		int			side = shape->exit_side[e];

		/* the outcomes on the path from the root: left is 1 */
		while (k >= 0)
		{
			care |= 1u << k;
			if (side == 0)
				value |= 1u << k;
			side = parent_side[k];
			k = parent[k];
		}
		for (uint32_t mask = 0; mask < (1u << n); mask++)
			if ((mask & care) == value)
				row[mask] = (uint8_t) e;
	}
}

/* Build the table of one size */
static TileShapeTable *
ShapeTableBuild(int32_t n, SilvanStatus *status)
{
	TileShapeTable *table = calloc(1, sizeof(TileShapeTable));
	int32_t		count = TileShapeCount(n);
	int32_t		id = 0;

	if (table == NULL)
	{
		StatusNoMemory(status, "the tile shape table");
		return NULL;
	}
	table->tile_size = n;
	table->num_shapes = count;
	table->shapes = calloc((size_t) count, sizeof(TileShape));
	table->lut = malloc((size_t) count << n);
	if (table->shapes == NULL || table->lut == NULL)
	{
		free(table->shapes);
		free(table->lut);
		free(table);
		StatusNoMemory(status, "the tile shape table");
		return NULL;
	}
	for (uint32_t code = 0; code < (1u << (2 * n)); code++)
	{
		if (!ShapeCodeIsValid(code, n))
			continue;
		ShapeFill(&table->shapes[id], (uint16_t) code, n);
		ShapeFillLut(&table->shapes[id], n, table->lut + ((size_t) id << n));
		id++;
	}
	return table;
}

/* The shapes and LUT of a tile size, built on first use */
const TileShapeTable *
TileShapesGet(int32_t tile_size, SilvanStatus *status)
{
	if (tile_size < 1 || tile_size > TILE_MAX_SIZE)
	{
		StatusFail(status, SILVAN_ERROR_INVALID, "invalid tile size",
				   "Tile size %d is outside 1 to %d.", tile_size, TILE_MAX_SIZE);
		return NULL;
	}
	if (shape_tables[tile_size] == NULL)
		shape_tables[tile_size] = ShapeTableBuild(tile_size, status);
	return shape_tables[tile_size];
}

/* Id of the shape with this code, or -1 */
int32_t
TileShapeFind(const TileShapeTable *table, uint16_t code)
{
	int32_t		lo = 0;
	int32_t		hi = table->num_shapes - 1;

	while (lo <= hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;

		if (table->shapes[mid].code == code)
			return mid;
		if (table->shapes[mid].code < code)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Append the subtree of slot k as text: o(left,right), - for no child */
static void
ShapeFormatSlot(const TileShape *shape, int32_t k, char *out, size_t size,
				size_t *len)
{
	const int8_t *child = shape->child[k];

	*len += snprintf(out + *len, *len < size ? size - *len : 0, "o");
	if (child[0] < 0 && child[1] < 0)
		return;
	*len += snprintf(out + *len, *len < size ? size - *len : 0, "(");
	if (child[0] >= 0)
		ShapeFormatSlot(shape, child[0], out, size, len);
	else
		*len += snprintf(out + *len, *len < size ? size - *len : 0, "-");
	*len += snprintf(out + *len, *len < size ? size - *len : 0, ",");
	if (child[1] >= 0)
		ShapeFormatSlot(shape, child[1], out, size, len);
	else
		*len += snprintf(out + *len, *len < size ? size - *len : 0, "-");
	*len += snprintf(out + *len, *len < size ? size - *len : 0, ")");
}

/* A shape as text, such as o(o,o(-,o)); 64 bytes hold any shape */
void
TileShapeFormat(const TileShapeTable *table, int32_t shape, char *out, size_t size)
{
	size_t		len = 0;

	if (size == 0)
		return;
	out[0] = '\0';
	if (shape < 0 || shape >= table->num_shapes)
		return;
	ShapeFormatSlot(&table->shapes[shape], 0, out, size, &len);
}

/* Free the cached tables (tests, leak checkers) */
void
TileShapesReset(void)
{
	for (int32_t n = 0; n <= TILE_MAX_SIZE; n++)
	{
		if (shape_tables[n] == NULL)
			continue;
		free(shape_tables[n]->shapes);
		free(shape_tables[n]->lut);
		free(shape_tables[n]);
		shape_tables[n] = NULL;
	}
}
