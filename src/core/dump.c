/*
 * dump.c
 *		The Forest IR as text, for tests, debugging and explain output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/forest.h"
#include "silvan/text.h"

static const char *const transform_names[] = {
	"identity", "sigmoid", "softmax", "sigmoid_ova", "exp", "hinge",
	"log1p_exp", "signed_square", "onnx_logistic", "onnx_softmax",
	"onnx_softmax_zero", "onnx_probit", "exp_double"
};
_Static_assert(sizeof(transform_names) / sizeof(transform_names[0]) ==
			   FOREST_TRANSFORM_LAST + 1, "one name per transform");

static const char *const compare_names[] = {"<", "<=", ">=", ">", "==", "!="};
static const char *const aggregate_names[] = {"sum", "min", "max"};

static const char *const missing_names[] = {"nan", "zero", "none"};

/* How many feature names a dump shows before it only counts the rest */
#define DUMP_MAX_FEATURE_NAMES 64

/* The feature names, with declared types, as "  features=a:q,b:c" */
static void
DumpFeatureNames(TextBuf *buf, const Forest *forest)
{
	int32_t		shown;

	if (forest->feature_names == NULL && forest->feature_types == NULL)
		return;
	shown = forest->num_features < DUMP_MAX_FEATURE_NAMES ?
		forest->num_features : DUMP_MAX_FEATURE_NAMES;
	TextAppend(buf, "  features=");
	for (int32_t i = 0; i < shown; i++)
		TextAppend(buf, "%s%s%s%s", i ? "," : "",
				   forest->feature_names ? forest->feature_names[i] : "",
				   forest->feature_types ? ":" : "",
				   forest->feature_types ? forest->feature_types[i] : "");
	if (shown < forest->num_features)
		TextAppend(buf, ",... (%d more)", forest->num_features - shown);
	TextAppend(buf, "\n");
}


/* Dump one node on one line */
static void
DumpNode(TextBuf *buf, const ForestNode *node, int32_t local)
{
	if (node->kind == FOREST_NODE_LEAF)
		TextAppend(buf, "    %d: leaf %.9g\n", local, node->leaf_value);
	else if (node->kind == FOREST_NODE_NUMERIC)
		TextAppend(buf, "    %d: f%d %s %.17g ? %d : %d (missing %s%s)\n",
				local, node->feature,
				compare_names[node->compare % 6],
				node->threshold, node->left, node->right,
				missing_names[node->missing % 3],
				node->default_left ? ", default left" : "");
	else
		TextAppend(buf, "    %d: f%d in set@%lld/%d ? %d : %d (members go %s%s)\n",
				local, node->feature, (long long) node->category_offset,
				node->category_words,
				node->category_in_left ? node->left : node->right,
				node->category_in_left ? node->right : node->left,
				node->category_in_left ? "left" : "right",
				node->default_left ? ", missing left" : "");
}

/* Dump the forest header, the tree table and optionally every node */
char *
ForestDump(const Forest *forest, bool with_nodes)
{
	TextBuf	buf = {0};

	TextAppend(&buf, "forest source=%s objective=%s task=%s transform=%s precision=%s\n",
			ForestSourceName(forest->source), forest->objective,
			ForestTaskName(forest->task),
			transform_names[forest->transform % (FOREST_TRANSFORM_LAST + 1)],
			forest->precision == FOREST_FLOAT32 ? "float32" : "float64");
	TextAppend(&buf, "  features=%d groups=%d classes=%d trees=%d nodes=%lld max_depth=%d",
			forest->num_features, forest->num_groups, forest->num_classes,
			forest->num_trees, (long long) forest->num_nodes, forest->max_depth);
	if (forest->average_output)
		TextAppend(&buf, " average_over=%d", forest->average_divisor);
	if (forest->aggregate != FOREST_AGGREGATE_SUM)
		TextAppend(&buf, " aggregate=%s", aggregate_names[forest->aggregate % 3]);
	if (forest->base_margin_last)
		TextAppend(&buf, " base_last");

	TextAppend(&buf, "\n  base_margin=");
	for (int32_t g = 0; g < forest->num_groups; g++)
		TextAppend(&buf, "%s%.9g", g ? "," : "", forest->base_margin[g]);
	TextAppend(&buf, "\n");
	DumpFeatureNames(&buf, forest);
	if (forest->class_labels != NULL)
	{
		TextAppend(&buf, "  classes=");
		for (int32_t c = 0; c < forest->num_classes && c < DUMP_MAX_FEATURE_NAMES; c++)
			TextAppend(&buf, "%s%s", c ? "," : "", forest->class_labels[c]);
		if (forest->num_classes > DUMP_MAX_FEATURE_NAMES)
			TextAppend(&buf, ",... (%d more)", forest->num_classes - DUMP_MAX_FEATURE_NAMES);
		TextAppend(&buf, "\n");
	}
	for (int32_t t = 0; with_nodes && t < forest->num_trees; t++)
	{
		const ForestTree *tree = &forest->trees[t];

		TextAppend(&buf, "  tree %d group=%d nodes=%d depth=%d\n",
				t, tree->group, tree->num_nodes, tree->depth);
		for (int32_t n = 0; n < tree->num_nodes; n++)
			DumpNode(&buf, &forest->nodes[tree->first_node + n], n);
	}
	return TextFinish(&buf);
}
