/*
 * features.c
 *		Feature names between a forest, the catalog and a table's columns.
 *
 * A model's feature names and types live in silvan.model's feature_names
 * and feature_types columns (text[], NULL when the library recorded none),
 * not in the forest's binary form: load_model writes them from the parsed
 * forest, and the cache gives them back to the forest it deserializes.
 * A catalog not yet updated to 0.3.0 has no such columns; then reads get
 * no names and writes leave them out, until ALTER EXTENSION silvan UPDATE
 * fills them from each model's source.
 *
 * predict_table matches columns to features (FeaturesSelectList):
 *   - feature_columns given: the i-th column is the i-th feature;
 *   - else, when every feature name is a column: by name, in the model's
 *     order, whatever the table's order and extra columns;
 *   - else, when the names are real (not a library's "Column_3", "f3" or
 *     "3") and the rest of the table is not one array column: an error
 *     listing the missing columns, never a silent match by position;
 *   - else the rule of models without names: every column but the key,
 *     in the table's order, or the one array column.
 * A scan matched by position checks that no column has the name of
 * another position's feature (FeaturesCheckPositions), which would score
 * features in the wrong order.  A whole row passed to predict() is matched
 * the same way, without a key column (FeaturesMatchRow).
 */
#include "silvan_pg.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "silvan/parse.h"

/* How many missing columns an error names before it only counts the rest */
#define FEATURES_MAX_REPORTED 10

/* Does silvan.model have the feature columns of 0.3.0? */
bool
FeaturesInCatalog(void)
{
	return get_attnum(SilvanCatalogRelid("model"), "feature_names") != InvalidAttrNumber;
}

/*
 * A forest's names or types as text[]; NULL if it has none.  A string not
 * valid in the database's encoding is an error, or with lenient a NULL.
 */
Datum
FeaturesToArray(const Forest *forest, ForestFeatureField field, bool lenient, bool *isnull)
{
	char	  **list = field == FOREST_FEATURE_NAMES ? forest->feature_names : forest->feature_types;
	Size		nbytes = 0;
	ArrayType  *array;
	char	   *p;

	*isnull = list == NULL;
	if (list == NULL)
		return (Datum) 0;
	for (int32 i = 0; i < forest->num_features; i++)
	{
		if (!pg_verifymbstr(list[i], strlen(list[i]), true))
		{
			*isnull = true;
			if (lenient)
				return (Datum) 0;
			ereport(ERROR,
					(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
					 errmsg("invalid feature name"),
					 errdetail("Entry %d of field \"%s\" is not valid in encoding \"%s\".", i,
							   field == FOREST_FEATURE_NAMES ? "feature_names" : "feature_types",
							   GetDatabaseEncodingName())));
		}
		nbytes = INTALIGN(nbytes + VARHDRSZ + strlen(list[i]));
		if (nbytes > MaxAllocSize - ARR_OVERHEAD_NONULLS(1))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("feature names too long"),
					 errdetail("The model's %d entries of field \"%s\" take more than 1 GB.",
							   forest->num_features,
							   field == FOREST_FEATURE_NAMES ? "feature_names" : "feature_types")));
	}
	/* the text[] built in place: a palloc'd text per name cost 30 bytes a name more */
	array = palloc0(ARR_OVERHEAD_NONULLS(1) + nbytes);
	SET_VARSIZE(array, ARR_OVERHEAD_NONULLS(1) + nbytes);
	array->ndim = 1;
	array->dataoffset = 0;
	array->elemtype = TEXTOID;
	ARR_DIMS(array)[0] = forest->num_features;
	ARR_LBOUND(array)[0] = 1;
	p = ARR_DATA_PTR(array);
	for (int32 i = 0; i < forest->num_features; i++)
	{
		size_t		len = strlen(list[i]);

		SET_VARSIZE(p, VARHDRSZ + len);
		memcpy(VARDATA(p), list[i], len);
		p += INTALIGN(VARHDRSZ + len);
	}
	return PointerGetDatum(array);
}

/* A forest's class labels as text[] (lenient about the encoding: NULL); NULL if none */
Datum
FeaturesClassLabels(const Forest *forest, bool *isnull)
{
	Datum	   *items;

	*isnull = true;
	if (forest->class_labels == NULL || forest->num_classes < 1)
		return (Datum) 0;
	items = palloc(sizeof(Datum) * forest->num_classes);
	for (int32 c = 0; c < forest->num_classes; c++)
	{
		if (!pg_verifymbstr(forest->class_labels[c], strlen(forest->class_labels[c]), true))
			return (Datum) 0;
		items[c] = CStringGetTextDatum(forest->class_labels[c]);
	}
	*isnull = false;
	return PointerGetDatum(construct_array(items, forest->num_classes, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

/* Give a forest the names or types of a catalog text[] */
void
FeaturesFromArray(Forest *forest, ForestFeatureField field, Datum array)
{
	SilvanStatus status;
	Datum	   *items;
	bool	   *nulls;
	int			n;
	const char **strings;
	size_t	   *lengths;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &items, &nulls, &n);
	strings = palloc(sizeof(char *) * Max(n, 1));
	lengths = palloc(sizeof(size_t) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		strings[i] = nulls[i] ? "" : VARDATA_ANY(DatumGetPointer(items[i]));
		lengths[i] = nulls[i] ? 0 : VARSIZE_ANY_EXHDR(DatumGetPointer(items[i]));
	}
	if (!ForestSetFeatureStrings(forest, field, strings, lengths, n, &status))
		SilvanReportStatus(ERROR, &status);
}

/* Is the one column of rel besides the key an array? */
static bool
FeaturesOneArrayColumn(TupleDesc desc, const char *key_column)
{
	int			columns = 0;
	bool		array = false;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), key_column) == 0)
			continue;
		columns++;
		array = OidIsValid(get_element_type(att->atttypid));
	}
	return columns == 1 && array;
}

/* A column's position by name: the entries of a ColumnIndex */
typedef struct ColumnEntry
{
	char		name[NAMEDATALEN];	/* the key */
	int			position;
} ColumnEntry;

/*
 * The live columns of desc from column first on, by name, so that matching
 * n features to m columns takes n + m steps however wide both are
 */
static HTAB *
ColumnIndexCreate(TupleDesc desc, int first)
{
	HASHCTL		ctl;
	HTAB	   *index;

	ctl.keysize = NAMEDATALEN;
	ctl.entrysize = sizeof(ColumnEntry);
	ctl.hcxt = CurrentMemoryContext;
	index = hash_create("silvan columns", Max(desc->natts, 1), &ctl,
						HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (int i = first; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		ColumnEntry *entry;
		bool		found;

		if (att->attisdropped)
			continue;
		entry = hash_search(index, NameStr(att->attname), HASH_ENTER, &found);
		if (!found)
			entry->position = i - first;
	}
	return index;
}

/* The position of the column named name; -1 when none is */
static int
ColumnIndexFind(HTAB *index, const char *name)
{
	ColumnEntry *entry;

	if (strlen(name) >= NAMEDATALEN)
		return -1;				/* no column name is that long */
	entry = hash_search(index, name, HASH_FIND, NULL);
	return entry ? entry->position : -1;
}

/*
 * Error naming the model's features that desc lacks; subject says whose
 * columns they are (relation "t", row type t)
 */
static void
FeaturesReportMissing(TupleDesc desc, const char *subject, const Forest *forest,
					  const char *model, const char *hint)
{
	StringInfoData missing;
	int			count = 0;
	HTAB	   *columns = ColumnIndexCreate(desc, 0);

	initStringInfo(&missing);
	for (int32 i = 0; i < forest->num_features; i++)
		if (ColumnIndexFind(columns, forest->feature_names[i]) < 0 &&
			count++ < FEATURES_MAX_REPORTED)
			appendStringInfo(&missing, "%s%s", count > 1 ? ", " : "",
							 quote_identifier(forest->feature_names[i]));
	if (count > FEATURES_MAX_REPORTED)
		appendStringInfo(&missing, " and %d more", count - FEATURES_MAX_REPORTED);
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("%s lacks features of model \"%s\"", subject, model),
			 errdetail("The model's features are matched to columns by name; no column is named %s.",
					   missing.data),
			 errhint("%s", hint)));
}

/* Error for a feature column of a type that cannot be read as a number */
void
FeaturesReportColumnType(const char *column, Oid typid)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("feature column \"%s\" is not numeric", column),
			 errdetail("Column \"%s\" has type %s; features must be integer, floating-point, numeric or boolean, or one array of them.",
					   column, format_type_be(typid))));
}

/*
 * Append ", col, col, ..." for the features of a predict_table source when
 * feature_columns is NULL (see the rules above); false when the columns
 * are matched by position, so the caller appends them in the table's order
 */
bool
FeaturesSelectList(StringInfo sql, Relation rel, const char *key_column,
				   const Forest *forest, const char *model)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		all = forest->feature_names != NULL;
	HTAB	   *columns = all ? ColumnIndexCreate(desc, 0) : NULL;

	for (int32 i = 0; all && i < forest->num_features; i++)
		all = ColumnIndexFind(columns, forest->feature_names[i]) >= 0;
	if (columns != NULL)
		hash_destroy(columns);
	if (all)
	{
		for (int32 i = 0; i < forest->num_features; i++)
			appendStringInfo(sql, ", %s", quote_identifier(forest->feature_names[i]));
		return true;
	}
	if (!ForestFeatureNamesPositional(forest) && !FeaturesOneArrayColumn(desc, key_column))
	{
		char	   *subject = psprintf("relation \"%s\"", RelationGetRelationName(rel));

		FeaturesReportMissing(desc, subject, forest, model,
							  "Pass feature_columns with one column per feature, in the order silvan.model_features lists them.");
	}
	return false;
}

/*
 * Check a source matched by position: a column named like another
 * position's feature means the features would be read in the wrong order
 */
void
FeaturesCheckPositions(TupleDesc desc, int first, const Forest *forest, const char *model)
{
	HTAB	   *columns;

	if (forest->feature_names == NULL)
		return;
	columns = ColumnIndexCreate(desc, first);
	for (int32 i = 0; i < forest->num_features; i++)
	{
		int			position = ColumnIndexFind(columns, forest->feature_names[i]);

		if (position >= 0 && position != i && position < forest->num_features)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("column \"%s\" would be read as feature \"%s\" of model \"%s\"",
							forest->feature_names[i], forest->feature_names[position], model),
					 errdetail("Features are read by position: feature column %d is the model's feature %d (\"%s\"), but the model's feature named \"%s\" is feature %d.",
							   position + 1, position + 1, forest->feature_names[position],
							   forest->feature_names[i], i + 1),
					 errhint("Put the columns in the order silvan.model_features lists them, or rename the column.")));
	}
	hash_destroy(columns);
}

/*
 * The columns of a row type (desc, named type_name) that hold a model's
 * features, one attribute index per feature, by the rules above for a
 * source without a key: by name when every feature name is a column; an
 * error naming the missing ones when the names are real; else the live
 * columns in order, as many as the model has features.  Each column must
 * be of a type FeatureElementType accepts.
 */
int *
FeaturesMatchRow(TupleDesc desc, const char *type_name, const Forest *forest, const char *model)
{
	int		   *columns = palloc(sizeof(int) * Max(forest->num_features, 1));
	HTAB	   *index = forest->feature_names ? ColumnIndexCreate(desc, 0) : NULL;
	bool		by_name = index != NULL;
	int			live = 0;

	for (int32 i = 0; by_name && i < forest->num_features; i++)
		by_name = (columns[i] = ColumnIndexFind(index, forest->feature_names[i])) >= 0;
	if (!by_name && forest->feature_names != NULL && !ForestFeatureNamesPositional(forest))
		FeaturesReportMissing(desc, psprintf("row type %s", type_name), forest, model,
							  "Name the row's columns as silvan.model_features lists the features, or pass an array of the features in that order.");
	for (int a = 0; !by_name && a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		int			other;

		if (att->attisdropped)
			continue;
		/* a column named like another position's feature would be read as the wrong one */
		if (index != NULL && live < forest->num_features &&
			(other = ColumnIndexFind(index, forest->feature_names[live])) >= 0 && other != a)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("column \"%s\" would be read as feature %d of model \"%s\"",
							NameStr(att->attname), live + 1, model),
					 errdetail("Without every feature name among the columns, features are read by position; the model's feature %d is named \"%s\", which is another column.",
							   live + 1, forest->feature_names[live]),
					 errhint("Put the columns in the order silvan.model_features lists them, or rename the column.")));
		if (live < forest->num_features)
			columns[live] = a;
		live++;
	}
	if (!by_name && live != forest->num_features)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wrong number of features for model \"%s\"", model),
				 errdetail("Expected %d features, got a row of type %s with %d columns.",
						   forest->num_features, type_name, live),
				 errhint("Without feature names the row's columns are the features, in order; pass a row of only those, or an array.")));
	if (index != NULL)
		hash_destroy(index);
	for (int32 i = 0; i < forest->num_features; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, columns[i]);

		if (!OidIsValid(FeatureElementType(att->atttypid)))
			FeaturesReportColumnType(NameStr(att->attname), att->atttypid);
	}
	return columns;
}

/* Fill values/nulls with a forest's names and types; frees the forest */
static void
FeaturesOfForest(Forest *forest, Datum *values, bool *nulls)
{
	PG_TRY();
	{
		values[0] = FeaturesToArray(forest, FOREST_FEATURE_NAMES, true, &nulls[0]);
		values[1] = FeaturesToArray(forest, FOREST_FEATURE_TYPES, true, &nulls[1]);
	}
	PG_CATCH();
	{
		ForestFree(forest);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ForestFree(forest);
}

PG_FUNCTION_INFO_V1(silvan_source_features);

/*
 * source_features(source, format): the feature names and types of a model's
 * source text, for the update to 0.3.0; NULLs where the text cannot be read
 */
Datum
silvan_source_features(PG_FUNCTION_ARGS)
{
	char	   *source = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *format_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	TupleDesc	desc;
	Datum		values[2] = {0, 0};
	bool		nulls[2] = {true, true};
	ModelFormat format;
	SilvanStatus status;
	Forest	   *forest;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "source_features must return a record");
	if (!ModelFormatFromName(format_name, &format))
		format = MODEL_FORMAT_AUTO;
	forest = ParseModel(source, strlen(source), format, &format, &status);
	if (forest != NULL)
		FeaturesOfForest(forest, values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
