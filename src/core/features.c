/*
 * features.c
 *		A forest's feature names and declared types.
 *
 * Libraries keep the names of the columns a model was trained on (XGBoost
 * "feature_names" and "feature_types", LightGBM "feature_names="); silvan
 * keeps them so that a table's columns are matched to features by name
 * rather than by position.  They are optional: a forest has either no
 * names or exactly one per feature, and the same for types.
 *
 * Names come from untrusted text, so each is checked before it is kept:
 * at most FOREST_MAX_FEATURE_NAME bytes, no NUL byte, and no name twice
 * (both libraries refuse duplicate names; two features with one name
 * could not be told apart by a column).  A list is stored as one block:
 * num_features pointers followed by the NUL-terminated strings.
 *
 * Some names carry no information: LightGBM calls unnamed features
 * "Column_0", "Column_1", ..., XGBoost "f0", "f1", ..., and a pandas frame
 * without column labels gives "0", "1", ....  ForestFeatureNamesPositional
 * recognizes lists made only of these, so the adapter can keep matching
 * such models by position.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/decode_budget.h"
#include "silvan/forest.h"

/* Compare two strings through pointers to them, for sorting */
static int
CompareNames(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Check each string's length and bytes */
static bool
FeatureStringsCheck(const char *field, const char *const *strings,
					const size_t *lengths, int32_t count, size_t *total,
					SilvanStatus *status)
{
	uint32_t	ticks = 0;

	*total = 0;
	for (int32_t i = 0; i < count; i++)
	{
		if (CancelTick(&ticks))
			return StatusCanceled(status, "reading the feature names");
		if (lengths[i] > FOREST_MAX_FEATURE_NAME)
			return StatusFail(status, SILVAN_ERROR_INVALID, "feature name too long",
							  "Entry %d of field \"%s\" has %zu bytes; at most %d are supported.",
							  i, field, lengths[i], FOREST_MAX_FEATURE_NAME);
		if (memchr(strings[i], '\0', lengths[i]) != NULL)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid feature name",
							  "Entry %d of field \"%s\" contains a zero byte.", i, field);
		*total += lengths[i] + 1;
	}
	return true;
}

/* Report the first name that occurs twice in a list; true when none does */
static bool
FeatureNamesUnique(char **names, int32_t count, SilvanStatus *status)
{
	char	  **sorted = malloc(sizeof(char *) * (count > 0 ? count : 1));

	if (sorted == NULL)
		return StatusNoMemory(status, "the feature names");
	memcpy(sorted, names, sizeof(char *) * count);
	if (!DecodeSort(sorted, count, sizeof(char *), CompareNames))
	{
		free(sorted);
		return StatusCanceled(status, "checking the feature names");
	}
	for (int32_t i = 1; i < count; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0)
		{
			StatusFail(status, SILVAN_ERROR_INVALID, "duplicate feature name",
					   "Field \"feature_names\" names feature \"%.64s\" more than once.",
					   sorted[i]);
			free(sorted);
			return false;
		}
	free(sorted);
	return true;
}

/* Copy count strings into one block of pointers and text */
static char **
FeatureStringsCopy(const char *const *strings, const size_t *lengths,
				   int32_t count, size_t total, SilvanStatus *status)
{
	char	  **list = malloc(sizeof(char *) * count + total);
	char	   *text;

	if (list == NULL)
	{
		StatusNoMemory(status, "the feature names");
		return NULL;
	}
	text = (char *) (list + count);
	for (int32_t i = 0; i < count; i++)
	{
		list[i] = text;
		memcpy(text, strings[i], lengths[i]);
		text[lengths[i]] = '\0';
		text += lengths[i] + 1;
	}
	return list;
}

/*
 * Give the forest its feature names (field "feature_names") or types
 * ("feature_types"): count strings of the given lengths, which must be one
 * per feature.  Preconditions: num_features is set.
 */
bool
ForestSetFeatureStrings(Forest *forest, ForestFeatureField field,
						const char *const *strings, const size_t *lengths,
						int64_t count, SilvanStatus *status)
{
	const char *name = field == FOREST_FEATURE_NAMES ? "feature_names" : "feature_types";
	char	  **list;
	size_t		total;

	if (count != forest->num_features)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid feature names",
						  "Field \"%s\" has %lld entries; the model has %d features.",
						  name, (long long) count, forest->num_features);
	if (!FeatureStringsCheck(name, strings, lengths, (int32_t) count, &total, status) ||
		(list = FeatureStringsCopy(strings, lengths, (int32_t) count, total, status)) == NULL)
		return false;
	if (field == FOREST_FEATURE_NAMES && !FeatureNamesUnique(list, (int32_t) count, status))
	{
		free(list);
		return false;
	}
	if (field == FOREST_FEATURE_NAMES)
	{
		free(forest->feature_names);
		forest->feature_names = list;
	}
	else
	{
		free(forest->feature_types);
		forest->feature_types = list;
	}
	return true;
}

/* Is name a library's default name for feature i ("Column_i", "fi", "i")? */
static bool
FeatureNameIsPositional(const char *name, int32_t i)
{
	char		digits[16];

	snprintf(digits, sizeof(digits), "%d", i);
	if (strncmp(name, "Column_", 7) == 0)
		name += 7;
	else if (name[0] == 'f')
		name += 1;
	return strcmp(name, digits) == 0;
}

/*
 * Do the forest's names only restate positions (or is there none)?  Such
 * names say nothing about which column is which feature.
 */
bool
ForestFeatureNamesPositional(const Forest *forest)
{
	if (forest->feature_names == NULL)
		return true;
	for (int32_t i = 0; i < forest->num_features; i++)
		if (!FeatureNameIsPositional(forest->feature_names[i], i))
			return false;
	return true;
}

/*
 * Give the forest its class labels: count strings of the given lengths,
 * one per class (num_classes), each at most FOREST_MAX_CLASS_LABEL bytes
 * without a zero byte and no label twice (predict's index must name one
 * class).  Preconditions: num_classes is set.
 */
bool
ForestSetClassLabels(Forest *forest, const char *const *labels,
					 const size_t *lengths, int64_t count, SilvanStatus *status)
{
	char	  **list;
	char	  **sorted;
	size_t		total = 0;

	if (count != forest->num_classes || count < 1)
		return StatusFail(status, SILVAN_ERROR_INVALID, "invalid class labels",
						  "Field \"classlabels\" has %lld entries; the model has %d classes.",
						  (long long) count, forest->num_classes);
	for (int64_t i = 0; i < count; i++)
	{
		if (lengths[i] > FOREST_MAX_CLASS_LABEL)
			return StatusFail(status, SILVAN_ERROR_INVALID, "class label too long",
							  "Entry %lld of field \"classlabels\" has %zu bytes; at most %d are supported.",
							  (long long) i, lengths[i], FOREST_MAX_CLASS_LABEL);
		if (memchr(labels[i], '\0', lengths[i]) != NULL)
			return StatusFail(status, SILVAN_ERROR_INVALID, "invalid class label",
							  "Entry %lld of field \"classlabels\" contains a zero byte.",
							  (long long) i);
		total += lengths[i] + 1;
	}
	list = FeatureStringsCopy(labels, lengths, (int32_t) count, total, status);
	if (list == NULL)
		return false;
	sorted = malloc(sizeof(char *) * count);
	if (sorted == NULL)
	{
		free(list);
		return StatusNoMemory(status, "the class labels");
	}
	memcpy(sorted, list, sizeof(char *) * count);
	qsort(sorted, count, sizeof(char *), CompareNames);
	for (int64_t i = 1; i < count; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0)
		{
			StatusFail(status, SILVAN_ERROR_INVALID, "duplicate class label",
					   "Field \"classlabels\" names class \"%.64s\" more than once.",
					   sorted[i]);
			free(sorted);
			free(list);
			return false;
		}
	free(sorted);
	free(forest->class_labels);
	forest->class_labels = list;
	return true;
}
