/*
 * interpret.c
 *		The reference interpreter: a plain walk of the Forest IR.
 *
 * This is the ground truth that every compiled variant is tested against,
 * and the fallback when silvan.jit is off.  It follows the training
 * libraries' decision rules literally (see ForestNode in forest.h) and sums
 * leaf values tree by tree, in model order, in the forest's precision
 * (or keeps the smallest or largest one for MIN/MAX forests, with NaN in
 * the accumulator standing for "no tree yet").  Feature values are widened to double for comparisons; for FLOAT32
 * forests both sides are exact floats, so this equals a float compare.
 */
#include <math.h>

#include "silvan/forest.h"

/* Read feature f of a row of the forest's precision, widened to double */
static inline double
RowValue(const Forest *forest, const void *row, int32_t feature)
{
	if (forest->precision == FOREST_FLOAT32)
		return ((const float *) row)[feature];
	return ((const double *) row)[feature];
}

/*
 * Category index of a non-NaN feature value, or -1 when it is no valid
 * category, by the forest's category_rule.  XGBoost (NONNEGATIVE) rejects
 * negative values before truncating; LightGBM (TRUNCATE) truncates toward
 * zero first, so (-1, 0) is category 0.  Values beyond FOREST_MAX_CATEGORY
 * can be in no set and are reported invalid.
 */
int
ForestCategoryOf(const Forest *forest, double x)
{
	if (forest->category_rule == FOREST_CATEGORY_NONNEGATIVE ? !(x >= 0.0) : !(x > -1.0))
		return -1;
	if (!(x < (double) FOREST_MAX_CATEGORY))
		return -1;
	return (int) x;
}

/* Is category c in the node's set? */
static inline bool
CategoryInSet(const Forest *forest, const ForestNode *node, int c)
{
	const uint32_t *words = forest->category_words + node->category_offset;

	if (c < 0 || c >= node->category_words * 32)
		return false;
	return (words[c / 32] >> (c % 32)) & 1;
}

/* The child a value leads to from a split node (tree-local index) */
static int32_t
NextChild(const Forest *forest, const ForestNode *node, double x)
{
	int32_t		fallback = node->default_left ? node->left : node->right;
	bool		go_left;

	if (node->kind == FOREST_NODE_CATEGORICAL)
	{
		bool		in_set;

		if (isnan(x))
			return fallback;
		in_set = CategoryInSet(forest, node, ForestCategoryOf(forest, x));
		return in_set == (bool) node->category_in_left ? node->left : node->right;
	}
	switch (node->missing)
	{
		case FOREST_MISSING_NAN:
			if (isnan(x))
				return fallback;
			break;
		case FOREST_MISSING_ZERO:
			if (isnan(x))
				x = 0.0;
			if (x >= -FOREST_ZERO_THRESHOLD && x <= FOREST_ZERO_THRESHOLD)
				return fallback;
			break;
		default:
			if (isnan(x))
				x = 0.0;
			break;
	}
	switch (node->compare)
	{
		case FOREST_CMP_LT:
			go_left = x < node->threshold;
			break;
		case FOREST_CMP_LE:
			go_left = x <= node->threshold;
			break;
		case FOREST_CMP_GE:
			go_left = x >= node->threshold;
			break;
		case FOREST_CMP_GT:
			go_left = x > node->threshold;
			break;
		case FOREST_CMP_EQ:
			go_left = x == node->threshold;
			break;
		default:
			go_left = x != node->threshold;
			break;
	}
	return go_left ? node->left : node->right;
}

/*
 * Does a value send a split node left?  The same rule as NextChild (it is
 * NextChild), for walks that evaluate nodes out of the usual order, such as
 * tiled walks that test every node of a tile before moving.
 */
bool
ForestNodeGoesLeft(const Forest *forest, const ForestNode *node, double x)
{
	return NextChild(forest, node, x) == node->left;
}

/* Walk one tree for one row; return the tree-local index of the leaf */
int32_t
ForestWalkTree(const Forest *forest, int32_t tree, const void *row)
{
	const ForestNode *nodes = forest->nodes + forest->trees[tree].first_node;
	int32_t		local = 0;

	while (nodes[local].kind != FOREST_NODE_LEAF)
		local = NextChild(forest, &nodes[local],
						  RowValue(forest, row, nodes[local].feature));
	return local;
}

/*
 * Fold one leaf value into a MIN/MAX accumulator slot (NaN: no tree yet),
 * as ONNX Runtime does: the new value wins when there is none yet or it is
 * strictly smaller (larger).
 */
static inline double
AggregateMinMax(uint8_t aggregate, double acc, double leaf)
{
	if (isnan(acc))
		return leaf;
	if (aggregate == FOREST_AGGREGATE_MIN)
		return leaf < acc ? leaf : acc;
	return leaf > acc ? leaf : acc;
}

/* Add every tree's leaf value into acc, row by row, trees in model order */
void
ForestInterpretAccumulate(const Forest *forest, const void *rows,
						  int64_t num_rows, void *acc)
{
	size_t		row_bytes = ForestValueSize(forest) * (size_t) forest->num_features;

	for (int64_t r = 0; r < num_rows; r++)
	{
		const void *row = (const char *) rows + (size_t) r * row_bytes;
		int64_t		base = r * forest->num_groups;

		for (int32_t t = 0; t < forest->num_trees; t++)
		{
			const ForestTree *tree = &forest->trees[t];
			double		leaf = forest->nodes[tree->first_node +
											 ForestWalkTree(forest, t, row)].leaf_value;

			if (forest->aggregate != FOREST_AGGREGATE_SUM)
			{
				if (forest->precision == FOREST_FLOAT32)
				{
					float	   *slot = &((float *) acc)[base + tree->group];

					*slot = (float) AggregateMinMax(forest->aggregate, *slot, (float) leaf);
				}
				else
				{
					double	   *slot = &((double *) acc)[base + tree->group];

					*slot = AggregateMinMax(forest->aggregate, *slot, leaf);
				}
			}
			else if (forest->precision == FOREST_FLOAT32)
				((float *) acc)[base + tree->group] += (float) leaf;
			else
				((double *) acc)[base + tree->group] += leaf;
		}
	}
}

/* Count, for every node, the rows whose walk visits it */
void
ForestProfileAccumulate(const Forest *forest, const void *rows,
						int64_t num_rows, int64_t *node_hits)
{
	size_t		row_bytes = ForestValueSize(forest) * (size_t) forest->num_features;

	for (int64_t r = 0; r < num_rows; r++)
	{
		const void *row = (const char *) rows + (size_t) r * row_bytes;

		for (int32_t t = 0; t < forest->num_trees; t++)
		{
			const ForestNode *nodes = forest->nodes + forest->trees[t].first_node;
			int64_t    *hits = node_hits + forest->trees[t].first_node;
			int32_t		local = 0;

			hits[0]++;
			while (nodes[local].kind != FOREST_NODE_LEAF)
			{
				local = NextChild(forest, &nodes[local],
								  RowValue(forest, row, nodes[local].feature));
				hits[local]++;
			}
		}
	}
}
