/*
 * dump.c
 *		The Forest IR as text, for tests, debugging and explain output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/forest.h"

/* A growable string */
typedef struct TextBuffer
{
	char	   *data;
	size_t		len;
	size_t		cap;
} TextBuffer;

static void Appendf(TextBuffer *buf, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* Append formatted text; on allocation failure the buffer stops growing */
static void
Appendf(TextBuffer *buf, const char *fmt,...)
{
	va_list		args;
	int			n;

	va_start(args, fmt);
	n = vsnprintf(NULL, 0, fmt, args);
	va_end(args);
	if (n < 0)
		return;
	if (buf->len + n + 1 > buf->cap)
	{
		size_t		cap = buf->cap ? buf->cap * 2 : 1024;
		char	   *grown;

		while (cap < buf->len + n + 1)
			cap *= 2;
		grown = realloc(buf->data, cap);
		if (grown == NULL)
			return;
		buf->data = grown;
		buf->cap = cap;
	}
	va_start(args, fmt);
	vsnprintf(buf->data + buf->len, n + 1, fmt, args);
	va_end(args);
	buf->len += n;
}

static const char *const transform_names[] = {
	"identity", "sigmoid", "softmax", "sigmoid_ova", "exp", "hinge",
	"log1p_exp", "signed_square"
};

static const char *const missing_names[] = {"nan", "zero", "none"};

/* Dump one node on one line */
static void
DumpNode(TextBuffer *buf, const ForestNode *node, int32_t local)
{
	if (node->kind == FOREST_NODE_LEAF)
		Appendf(buf, "    %d: leaf %.9g\n", local, node->leaf_value);
	else if (node->kind == FOREST_NODE_NUMERIC)
		Appendf(buf, "    %d: f%d %s %.17g ? %d : %d (missing %s%s)\n",
				local, node->feature,
				node->compare == FOREST_CMP_LT ? "<" : "<=",
				node->threshold, node->left, node->right,
				missing_names[node->missing % 3],
				node->default_left ? ", default left" : "");
	else
		Appendf(buf, "    %d: f%d in set@%lld/%d ? %d : %d (members go %s%s)\n",
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
	TextBuffer	buf = {0};

	Appendf(&buf, "forest source=%s objective=%s task=%s transform=%s precision=%s\n",
			ForestSourceName(forest->source), forest->objective,
			ForestTaskName(forest->task),
			transform_names[forest->transform % 8],
			forest->precision == FOREST_FLOAT32 ? "float32" : "float64");
	Appendf(&buf, "  features=%d groups=%d classes=%d trees=%d nodes=%lld max_depth=%d",
			forest->num_features, forest->num_groups, forest->num_classes,
			forest->num_trees, (long long) forest->num_nodes, forest->max_depth);
	if (forest->average_output)
		Appendf(&buf, " average_over=%d", forest->average_divisor);
	Appendf(&buf, "\n  base_margin=");
	for (int32_t g = 0; g < forest->num_groups; g++)
		Appendf(&buf, "%s%.9g", g ? "," : "", forest->base_margin[g]);
	Appendf(&buf, "\n");
	for (int32_t t = 0; with_nodes && t < forest->num_trees; t++)
	{
		const ForestTree *tree = &forest->trees[t];

		Appendf(&buf, "  tree %d group=%d nodes=%d depth=%d\n",
				t, tree->group, tree->num_nodes, tree->depth);
		for (int32_t n = 0; n < tree->num_nodes; n++)
			DumpNode(&buf, &forest->nodes[tree->first_node + n], n);
	}
	if (buf.data == NULL)
		return strdup("");
	return buf.data;
}
