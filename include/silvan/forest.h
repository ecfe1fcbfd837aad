/*
 * forest.h
 *		The Forest IR: a trained tree ensemble, independent of its source.
 *
 * Every parser (XGBoost JSON, LightGBM text, ...) produces a Forest; every
 * later stage (validation, the reference interpreter, serialization, the
 * compiler) consumes one.  The Forest keeps the training library's own
 * semantics rather than normalizing them away: comparison operator, missing
 * value rule, categorical rule, precision of comparisons and sums, base
 * margin and output transform.  Lowering passes normalize later.
 *
 * Layout: all trees' nodes live in one array; a tree owns the contiguous
 * range [first_node, first_node + num_nodes) and its root is first_node.
 * Child indices are tree-local (0 = the tree's root).  Categorical split
 * sets are bitsets of 32-bit words in one shared array.
 *
 * Memory: a Forest and its arrays are malloc'd and freed by ForestFree.
 * Nothing here includes postgres.h or raises.
 */
#ifndef SILVAN_FOREST_H
#define SILVAN_FOREST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "silvan/sha256.h"
#include "silvan/status.h"

/* Limits that keep hostile models from exhausting memory */
#define FOREST_MAX_FEATURES			(1 << 24)
#define FOREST_MAX_GROUPS			(1 << 16)
#define FOREST_MAX_TREES			(1 << 22)
#define FOREST_MAX_NODES			(INT64_C(1) << 30)
#define FOREST_MAX_DEPTH			4096
#define FOREST_MAX_CATEGORY			(1 << 24)	/* categories are 0..MAX-1 */
#define FOREST_MAX_CATEGORY_WORDS	(INT64_C(1) << 26)
#define FOREST_MAX_FEATURE_NAME		1024	/* bytes of one name or type */
#define FOREST_MAX_CLASS_LABEL		1024	/* bytes of one class label */

/* Which library trained the model */
typedef enum ForestSource
{
	FOREST_SOURCE_XGBOOST = 0,
	FOREST_SOURCE_LIGHTGBM = 1,
	FOREST_SOURCE_ONNX = 2		/* a TreeEnsemble operator of an ONNX graph */
} ForestSource;

/* Precision of feature values, comparisons, leaf values and sums */
typedef enum ForestPrecision
{
	FOREST_FLOAT32 = 0,			/* XGBoost: float features, float sums */
	FOREST_FLOAT64 = 1			/* LightGBM: double everywhere */
} ForestPrecision;

/* What predict() means for this model */
typedef enum ForestTask
{
	FOREST_TASK_REGRESSION = 0, /* one transformed value; no probabilities */
	FOREST_TASK_BINARY = 1,		/* one value p; probabilities {1-p, p} */
	FOREST_TASK_MULTICLASS = 2, /* predict = argmax; probabilities per class */
	FOREST_TASK_RANKING = 3		/* one raw score */
} ForestTask;

/*
 * Output transform applied to margins, in the forest's precision, each as
 * its library computes it (predict.c).  The values are stored in the
 * binary form: new ones go at the end.
 */
typedef enum ForestTransform
{
	FOREST_TRANSFORM_IDENTITY = 0,
	FOREST_TRANSFORM_SIGMOID = 1,	/* 1 / (1 + exp(-alpha * x)); float:
									 * XGBoost's, 1 / (expf(min(-x, 88.7)) + 1) */
	FOREST_TRANSFORM_SOFTMAX = 2,	/* over all groups of a row */
	FOREST_TRANSFORM_SIGMOID_OVA = 3,	/* sigmoid per group, unnormalized */
	FOREST_TRANSFORM_EXP = 4,		/* exp; float: expf */
	FOREST_TRANSFORM_HINGE = 5,		/* x > 0 ? 1 : 0 */
	FOREST_TRANSFORM_LOG1P_EXP = 6, /* log(1 + exp(x)), computed as LightGBM does */
	FOREST_TRANSFORM_SIGNED_SQUARE = 7, /* sign(x) * x * x */

	/*
	 * ONNX post_transform values, computed in float whatever the forest's
	 * precision, as ONNX Runtime's ml_common.h does:
	 */
	FOREST_TRANSFORM_ONNX_LOGISTIC = 8, /* v = 1/(1+exp(-|x|)); x < 0 ? 1-v : v */
	FOREST_TRANSFORM_ONNX_SOFTMAX = 9,	/* float max, float sum */
	FOREST_TRANSFORM_ONNX_SOFTMAX_ZERO = 10,	/* softmax skipping |x| <= 1e-7 */
	FOREST_TRANSFORM_ONNX_PROBIT = 11,	/* sqrt(2) * erfinv(2x - 1), Winitzki */

	FOREST_TRANSFORM_EXP_DOUBLE = 12	/* exp in double, then rounded to the
										 * forest's precision: float
										 * (float) exp((double) x), XGBoost's
										 * survival:aft */
} ForestTransform;

#define FOREST_TRANSFORM_LAST	FOREST_TRANSFORM_EXP_DOUBLE

/*
 * How the trees of one group combine into its margin.  SUM adds leaf values
 * tree by tree; MIN and MAX keep the smallest or largest leaf value of the
 * group's trees (a group without trees gets 0).  Averaging is separate
 * (average_output), and so is where the base margin goes (base_margin_last).
 */
typedef enum ForestAggregate
{
	FOREST_AGGREGATE_SUM = 0,
	FOREST_AGGREGATE_MIN = 1,
	FOREST_AGGREGATE_MAX = 2
} ForestAggregate;

/*
 * Which category a numeric value of a categorical split stands for (see
 * ForestCategoryOf).  Every parser sets it; nothing infers it from source.
 */
typedef enum ForestCategoryRule
{
	FOREST_CATEGORY_NONNEGATIVE = 0,	/* XGBoost: x >= 0, then truncated */
	FOREST_CATEGORY_TRUNCATE = 1	/* LightGBM: x > -1, truncated toward 0 */
} ForestCategoryRule;

/* Node kinds */
typedef enum ForestNodeKind
{
	FOREST_NODE_LEAF = 0,
	FOREST_NODE_NUMERIC = 1,
	FOREST_NODE_CATEGORICAL = 2
} ForestNodeKind;

/*
 * Comparison of a numeric split: go left iff x OP threshold (for a value
 * that is not missing; see ForestMissing).  The compiler implements all of
 * them: it rewrites GE, GT and NE as LT, LE and EQ with the children
 * swapped (hir.c), and stores EQ's kind in the split record (repr_split.c).
 */
typedef enum ForestCompare
{
	FOREST_CMP_LT = 0,			/* XGBoost, ONNX BRANCH_LT */
	FOREST_CMP_LE = 1,			/* LightGBM, ONNX BRANCH_LEQ */
	FOREST_CMP_GE = 2,			/* ONNX BRANCH_GTE */
	FOREST_CMP_GT = 3,			/* ONNX BRANCH_GT */
	FOREST_CMP_EQ = 4,			/* ONNX BRANCH_EQ */
	FOREST_CMP_NE = 5			/* ONNX BRANCH_NEQ */
} ForestCompare;

/*
 * How a split treats a missing value (NaN; a SQL NULL becomes NaN).
 *
 * NAN:  NaN takes the default child; everything else is compared.
 * ZERO: NaN is read as 0; then |x| <= 1e-35 takes the default child.
 * NONE: NaN is read as 0 and compared like any value.
 *
 * Categorical splits always use NAN.  ONNX splits use NAN with the default
 * child set to the branch ONNX Runtime takes for NaN: the true branch when
 * nodes_missing_value_tracks_true is set, or for BRANCH_NEQ (NaN != t);
 * otherwise the false branch (every other comparison with NaN is false).
 */
typedef enum ForestMissing
{
	FOREST_MISSING_NAN = 0,
	FOREST_MISSING_ZERO = 1,
	FOREST_MISSING_NONE = 2
} ForestMissing;

/* LightGBM's kZeroThreshold: |x| at or below it counts as zero */
#define FOREST_ZERO_THRESHOLD	1e-35f

/*
 * One node.
 *
 * Categorical splits: let c be the category of x.  The set holds the
 * categories stored as bits [0, category_words * 32) of the words at
 * category_offset.  If x is NaN, take the default child.  If x is not a
 * valid category (see ForestCategoryOf) or c is not in the set, take the
 * "out" child; if it is in the set, take the "in" child.  category_in_left
 * says which child is the "in" one: LightGBM sends members left, XGBoost
 * sends them right.
 */
typedef struct ForestNode
{
	uint8_t		kind;			/* ForestNodeKind */
	uint8_t		compare;		/* ForestCompare, numeric nodes */
	uint8_t		missing;		/* ForestMissing */
	uint8_t		default_left;	/* missing value goes left */
	uint8_t		category_in_left;	/* members of the set go left */
	int32_t		feature;		/* split feature, -1 on leaves */
	int32_t		left;			/* tree-local child indices, -1 on leaves */
	int32_t		right;
	int32_t		category_words; /* categorical: number of words */
	double		threshold;		/* numeric split threshold */
	double		leaf_value;		/* leaves: the value, any weight applied */
	int64_t		category_offset;	/* categorical: first word of the set */
} ForestNode;					/* 48 bytes: a model's nodes are most of a
								 * reader's memory */

/* One tree: a range of nodes and the output group it adds to */
typedef struct ForestTree
{
	int64_t		first_node;
	int32_t		num_nodes;
	int32_t		group;			/* which margin of the row it adds to */
	int32_t		depth;			/* longest root-to-leaf path in edges; set by
								 * ForestValidate */
} ForestTree;

typedef struct Forest
{
	ForestSource source;
	char		objective[64];	/* the library's objective name */
	ForestTask	task;
	ForestTransform transform;
	double		sigmoid_alpha;	/* SIGMOID / SIGMOID_OVA scale, usually 1 */
	ForestPrecision precision;

	int32_t		num_features;	/* features per row */
	int32_t		num_groups;		/* margins per row: 1, or the class count */
	int32_t		num_classes;	/* 1 regression/ranking, 2 binary, K */
	double	   *base_margin;	/* num_groups values added before the trees
								 * (already in margin space; float-rounded
								 * for FLOAT32) */
	bool		average_output; /* random forest: margins /= average_divisor */
	int32_t		average_divisor;	/* iterations (trees per group); ONNX:
									 * trees of the ensemble */
	uint8_t		aggregate;		/* ForestAggregate */

	/*
	 * false (XGBoost, LightGBM): the accumulator starts at base_margin, then
	 * the trees add to it, then the sum is averaged.  true (ONNX): the
	 * accumulator starts empty, trees are aggregated and averaged, and the
	 * base margin is added last, in the forest's precision.
	 */
	bool		base_margin_last;
	uint8_t		category_rule;	/* ForestCategoryRule */

	int32_t		num_trees;
	ForestTree *trees;
	int64_t		num_nodes;
	ForestNode *nodes;
	int64_t		num_category_words;
	uint32_t   *category_words;

	int32_t		max_depth;		/* set by ForestValidate */

	/*
	 * What the training library called the features and declared their
	 * types: NULL, or num_features strings (features.c).  Kept in the
	 * catalog's own columns, not in the binary form.
	 */
	char	  **feature_names;
	char	  **feature_types;

	/*
	 * NULL, or num_classes labels (ONNX classlabels_strings or _int64s
	 * written in decimal): predict() returns a class index, which names
	 * class_labels[index].  Kept in the binary form (version 2).
	 */
	char	  **class_labels;

	/*
	 * SHA-256 of the binary form the forest was read from (ForestDeserialize),
	 * in hex: it names the forest's machine code in the code cache
	 * (compile.c).  "" for a forest not read from one; compile.c then
	 * serializes it to hash it.  Code that changes a forest after reading
	 * it must clear the digest.
	 */
	char		digest[2 * SHA256_DIGEST_LEN + 1];
} Forest;

/* Which list ForestSetFeatureStrings sets */
typedef enum ForestFeatureField
{
	FOREST_FEATURE_NAMES = 0,
	FOREST_FEATURE_TYPES = 1
} ForestFeatureField;

/* forest.c: construction and teardown */
extern Forest *ForestCreate(SilvanStatus *status);
extern bool ForestAllocTrees(Forest *forest, int32_t num_trees, SilvanStatus *status);
extern bool ForestAllocNodes(Forest *forest, int64_t num_nodes, SilvanStatus *status);
extern bool ForestAllocCategoryWords(Forest *forest, int64_t num_words, SilvanStatus *status);
extern bool ForestAllocBaseMargin(Forest *forest, int32_t num_groups, SilvanStatus *status);
extern void ForestFree(Forest *forest);
extern int64_t ForestWidestCategorySpan(const Forest *forest);
extern const char *ForestSourceName(ForestSource source);
extern const char *ForestTaskName(ForestTask task);
extern const char *ForestUncompiledRule(const Forest *forest);

/* features.c: feature names and types, checked */
extern bool ForestSetFeatureStrings(Forest *forest, ForestFeatureField field,
									const char *const *strings, const size_t *lengths,
									int64_t count, SilvanStatus *status);
extern bool ForestFeatureNamesPositional(const Forest *forest);
extern bool ForestSetClassLabels(Forest *forest, const char *const *labels,
								 const size_t *lengths, int64_t count,
								 SilvanStatus *status);

/* compact.c: drop the nodes no walk reaches (before validation) */
extern int32_t ForestCompactTree(const ForestNode *nodes, int32_t n, ForestNode *dest,
								 int32_t *scratch);
extern bool ForestDropUnreached(Forest *forest, SilvanStatus *status);

/* validate.c: check every index and count; computes depths */
extern bool ForestValidate(Forest *forest, SilvanStatus *status);
extern bool ForestValidateHeader(const Forest *forest, SilvanStatus *status);

/* serialize.c: the compact binary form stored in the catalog */
extern bool ForestSerialize(const Forest *forest, uint8_t **data, size_t *size,
							SilvanStatus *status);
extern Forest *ForestDeserialize(const uint8_t *data, size_t size,
								 SilvanStatus *status);
extern bool ForestSameHeader(const Forest *a, const Forest *b);
extern bool ForestSameShape(const Forest *a, const Forest *b);
extern Forest *ForestDeserializeHeader(const uint8_t *data, size_t size,
									   int64_t *stored_nodes, SilvanStatus *status);

/* dump.c: the Forest IR as text (for tests and explain) */
extern char *ForestDump(const Forest *forest, bool with_nodes);

/*
 * interpret.c: the reference interpreter, the ground truth.
 *
 * Rows are num_features values each, row-major, of the forest's precision
 * (float for FLOAT32, double for FLOAT64); NaN means missing.  The margin
 * accumulator holds num_groups values per row of the same precision.
 */
extern int	ForestCategoryOf(const Forest *forest, double x);
extern bool ForestNodeGoesLeft(const Forest *forest, const ForestNode *node,
							   double x);
extern int32_t ForestWalkTree(const Forest *forest, int32_t tree, const void *row);
extern void ForestInterpretAccumulate(const Forest *forest, const void *rows,
									  int64_t num_rows, void *acc);

/*
 * Node hit counts gathered over real rows (silvan.profile), used by
 * probability-based tiling: node_hits[n] counts the rows whose walk
 * visited node n (global node index).
 */
typedef struct ForestProfile
{
	int64_t		num_rows;
	int64_t		num_nodes;		/* must equal the forest's */
	int64_t    *node_hits;
} ForestProfile;

/* interpret.c: add the nodes visited by num_rows rows to node_hits */
extern void ForestProfileAccumulate(const Forest *forest, const void *rows,
									int64_t num_rows, int64_t *node_hits);

/*
 * predict.c: the stages around the tree sum, shared by the interpreter and
 * compiled code so that both give identical results.
 *
 *   ForestMarginsInit: acc[row][g] = base_margin[g]
 *   (tree walks add leaf values into acc, tree by tree in model order)
 *   ForestMarginsFinish: average if needed; widen to double margins
 *   ForestTransformRow: margins of one row -> transformed values
 *   ForestPredictRow / ForestProbaRow: what predict() / predict_proba return
 *   ForestClassOfRow: the class a classifier's predict() names
 */
/* Bytes of one value of the forest's precision (a feature, a margin) */
static inline size_t
ForestValueSize(const Forest *forest)
{
	return forest->precision == FOREST_FLOAT32 ? sizeof(float) : sizeof(double);
}
extern void ForestMarginsInit(const Forest *forest, void *acc, int64_t num_rows);
extern void ForestMarginsFinish(const Forest *forest, const void *acc,
								int64_t num_rows, double *margins);
extern void ForestTransformRow(const Forest *forest, const double *margins,
							   double *out);
extern double ForestPredictRow(const Forest *forest, const double *margins);
extern void ForestPredictRows(const Forest *forest, double *margins, int64_t num_rows);
extern bool ForestHasProbabilities(const Forest *forest);
extern int32_t ForestClassOfRow(const Forest *forest, const double *margins);
extern int	ForestProbaRow(const Forest *forest, const double *margins,
						   double *out);
extern int	ForestProbaWidth(const Forest *forest);
extern int	ForestOutputWidth(const Forest *forest);

#endif							/* SILVAN_FOREST_H */
