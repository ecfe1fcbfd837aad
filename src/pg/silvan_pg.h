/*
 * silvan_pg.h
 *		Shared declarations of the PostgreSQL adapter.
 *
 * src/pg is the only part of silvan that includes postgres.h.  It owns the
 * catalog, the SQL-callable functions, the per-backend cache of loaded and
 * compiled models, and the translation of SilvanStatus into ereport().
 */
#ifndef SILVAN_PG_H
#define SILVAN_PG_H

#include "postgres.h"

#include <math.h>

#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "lib/ilist.h"
#include "lib/stringinfo.h"
#include "utils/acl.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "access/tupdesc.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#include "silvan/compiler.h"
#include "silvan/forest.h"
#include "silvan/gpu_run.h"
#include "silvan/status.h"

/* GUCs */
extern bool silvan_jit;
extern bool silvan_vector_walk;
extern int	silvan_host_profile;
extern int	silvan_compile_max_instructions;
extern int	silvan_compile_max_function_instructions;
extern int	silvan_compile_max_function_loops;

/* silvan.host_profile */
typedef enum SilvanHostProfileSetting
{
	SILVAN_HOST_PROFILE_MEASURED = 0,
	SILVAN_HOST_PROFILE_FALLBACK
} SilvanHostProfileSetting;
extern uint64 silvan_defaults_epoch;
extern int	silvan_max_threads;
extern int	silvan_tune_max_threads;
extern int	silvan_tune_sample_rows;
extern double silvan_tune_min_speedup;
extern int	silvan_tune_max_jobs_per_role;
extern int	silvan_tune_max_budget_per_role;

/* What a scoring function returns per row */
typedef enum ScoreOutput
{
	SCORE_PREDICT,				/* float8: the library's predict() */
	SCORE_PROBA,				/* float8[]: class probabilities */
	SCORE_RAW,					/* float8[]: margins before the transform */
	SCORE_LABEL,				/* text: the predicted class's label */
	SCORE_CLASS,				/* silvan.classification: label, index, probabilities */
	SCORE_PROFILE,				/* nothing: count node hits (silvan.profile) */
	SCORE_SAMPLE				/* nothing: keep the rows (silvan.tune's sample) */
} ScoreOutput;

/* A schedule stored in silvan.schedule */
typedef struct StoredSchedule
{
	char		target[8];		/* "cpu", "cuda", "rocm" */
	int32		batch_size;		/* 0: all batch sizes */
	char	   *text;
	bool		tuned;			/* origin 'tuned', else set by hand */
	char	   *provenance;		/* tuned: what was measured, in words */
} StoredSchedule;

/* Compiled code for one schedule of a model version, on one target */
typedef struct CompiledVariant
{
	const Target *target;		/* what it was compiled for (devices.c) */
	char	   *schedule_text;	/* the schedule it was compiled with */
	char		host_key[128];	/* and the host profile's choices (HostProfileKey) */
	CompiledForest *code;		/* NULL when the compiler declined */
	GpuForest  *gpu;			/* cuda, rocm: its kernel and buffers on the device */
} CompiledVariant;

#define MODEL_MAX_VARIANTS 8

/* What scoring with a model version did (stats.c) */
typedef struct ModelUsage
{
	int64		batches;		/* a scalar call is a batch of one row */
	int64		rows;
	double		scoring_ms;		/* in batches of more than one row */
	int64		timed_rows;		/* the rows of those batches */
	int64		compiles;
	int64		cache_loads;	/* machine code read from the code cache */
} ModelUsage;

/*
 * One loaded state of a model: a revision of its forest together with the
 * schedules and profile stored for it (any change to those makes a new
 * version), and the code compiled so far, one variant per schedule used.
 * Pinned while a scan uses it; a version replaced while pinned is freed
 * when the last pin goes.  Everything lives in cxt except the malloc'd
 * forest and compiled code.
 */
typedef struct ModelVersion
{
	MemoryContext cxt;
	int64		id;
	int64		revision;
	int32		number;			/* the model version's number (1 before versions) */
	char	   *fingerprint;	/* schedules + profile it was built with */
	/*
	 * The forest without its trees (ForestDeserializeHeader: no trees or
	 * nodes, counts zero), malloc'd: margins, outputs, feature names and
	 * the code cache need no more.  What needs the trees (interpreting,
	 * compiling, the default schedule, explain, tuning) asks
	 * ModelVersionForest, which reads the whole forest from stored once.
	 */
	Forest	   *header;
	Forest	   *whole;			/* malloc'd; NULL until ModelVersionForest */
	bytea	   *stored;			/* the catalog's binary form, in cxt, until read whole */
	int64		stored_nodes;	/* its node count */
	ForestProfile *profile;		/* NULL when the revision has none */
	int			num_schedules;
	StoredSchedule *schedules;
	int			num_variants;
	CompiledVariant variants[MODEL_MAX_VARIANTS];
	CompiledForest *busy_code;	/* a batch runs it on the pipeline thread */
	int32		last_batch_size;	/* fast path: the last batch size asked */
	int			last_variant;
	uint64		last_defaults_epoch;	/* ... and silvan_defaults_epoch then */
	int			pins;
	bool		orphaned;		/* no longer current; free at last unpin */
	/* who may use it: its model's owner and privileges (privileges.c) */
	Oid			owner;
	Acl		   *acl;			/* in cxt; NULL: none granted */
	bool		acl_checked;	/* false before versions: everyone may score */
	char		ref_name[NAMEDATALEN];	/* the model's name */
	ModelUsage	usage;			/* counted since the last flush (stats.c) */
	bool		usage_pending;	/* usage_node is in stats.c's list */
	dlist_node	usage_node;
} ModelVersion;

/* privileges.c */
extern void ModelVersionCheckPrivilege(const ModelVersion *version, AclMode mask, const char *name);
extern void ModelVersionSetAccess(ModelVersion *version, const char *name, Oid owner, Datum acl,
								  bool acl_null, bool versions);

/* stats.c */
extern int	silvan_stats_max_versions;
extern void StatsInit(void);
extern void StatsScored(ModelVersion *version, int64 rows, bool timed, double ms);
extern bool StatsOfVersion(int64 model_id, ModelUsage *usage);
extern bool StatsAreServerWide(void);
extern void StatsCode(ModelVersion *version, bool from_cache);
extern void StatsFlushVersion(ModelVersion *version);

/* silvan.c */
extern void SilvanReportStatus(int elevel, const SilvanStatus *status);

/* variant.c */
extern void SilvanDefaultSchedule(ModelVersion *version, int32 batch_size, Schedule *schedule);

/* host.c */
extern const HostProfile *SilvanHostProfile(void);
extern void SilvanCompileOptions(CompileOptions *options, const Target *target,
								 const char *arch);

/* cache.c */
extern void ModelCacheInit(void);
extern ModelVersion *ModelCacheLookup(const char *name);
extern uint64 ModelCacheGeneration(void);
extern void ModelVersionPin(ModelVersion *version);
extern void ModelVersionUnpin(ModelVersion *version);
extern Oid	SilvanCatalogRelid(const char *relname);

/* citus.c: the catalog through this node's placement of Citus reference tables */
extern void CatalogPlacementsInit(void);
extern bool CatalogDistributed(void);
extern Oid	SilvanCatalogReadRelid(const char *relname);
extern const char *CatalogLocalQuery(const char *query);
extern bool CitusDistributedTable(Oid relid);
extern ModelVersion *ModelVersionCreate(const char *name, int64 id, int64 revision,
										const char *fingerprint);
extern void ModelVersionDiscard(ModelVersion *version);
extern void ModelVersionSetForest(ModelVersion *version, Datum form, const Datum *features,
								  const bool *features_null);
extern Forest *ModelVersionForest(ModelVersion *version);
extern void ModelVersionAllocSchedules(ModelVersion *version, uint64 n);
extern void ModelVersionSetSchedule(ModelVersion *version, uint64 i, const char *target,
									int32 batch_size,
									const char *text, bool tuned, const char *provenance);
extern void ModelVersionSetProfile(ModelVersion *version, int64 num_rows, Datum node_hits);

/* model_ref.c: what a model argument names (a model, or one version of it) */
typedef enum ModelRefKind
{
	MODEL_REF_DEPLOYED,			/* 'churn' */
	MODEL_REF_NUMBER,			/* 'churn@3' */
	MODEL_REF_LATEST,			/* 'churn@latest' */
	MODEL_REF_ALIAS				/* 'churn@candidate' */
} ModelRefKind;

typedef struct ModelRef
{
	char		name[NAMEDATALEN];
	ModelRefKind kind;
	int32		number;			/* MODEL_REF_NUMBER */
	char		alias[NAMEDATALEN]; /* MODEL_REF_ALIAS, MODEL_REF_LATEST */
} ModelRef;

/* The row of silvan.model m that a reference ($1 name, $2 number, $3 alias) names */
#define MODEL_REF_WHERE \
	"m.name OPERATOR(pg_catalog.=) $1 AND m.version OPERATOR(pg_catalog.=) CASE" \
	" WHEN $2 IS NOT NULL THEN $2" \
	" WHEN $3 IS NULL THEN (SELECT r.version FROM silvan.registry r" \
	"                        WHERE r.name OPERATOR(pg_catalog.=) $1)" \
	" WHEN $3 OPERATOR(pg_catalog.=) 'latest' THEN (SELECT pg_catalog.max(l.version)" \
	"   FROM silvan.model l WHERE l.name OPERATOR(pg_catalog.=) $1)" \
	" ELSE (SELECT a.version FROM silvan.model_alias a WHERE a.name OPERATOR(pg_catalog.=) $1" \
	"        AND a.alias OPERATOR(pg_catalog.=) $3) END"

extern bool CatalogHasVersions(void);
extern bool ModelAliasValid(const char *text);
extern bool ModelRefSplit(const char *text, ModelRef *ref);
extern bool ModelRefParse(const char *text, ModelRef *ref);
extern void ModelRefArgs(const ModelRef *ref, Oid *types, Datum *args, char *nulls);
extern const char *ModelRefWhere(void);
extern void ModelRefCheckCatalog(const ModelRef *ref, const char *text);

/* catalog_read.c */
extern bool CatalogReadModel(const ModelRef *ref, const char *name, const ModelVersion *known,
							 Snapshot snapshot,
							 bool compare_only,
							 ModelVersion **version, bool *unchanged, bool *found);

/*
 * What to tune (tune.c): the arguments of tune() and tune_async(), checked.
 * Exactly one of sample_relid and sample_query, or neither (rows from the
 * profile or synthesized).
 */
typedef struct TuneRequest
{
	char	   *model;
	Oid			sample_relid;
	char	   *sample_query;
	char	   *key_column;
	ArrayType  *feature_columns;
	int32	   *batch_sizes;	/* distinct, ascending */
	int			num_batch_sizes;
	char	   *target;
	int			strategy;		/* TuneStrategy */
	Datum		budget;			/* interval */
	double		budget_seconds;
	bool		exact;
} TuneRequest;

/* catalog.c */
extern int64 CatalogCheckOwned(const char *name);
extern char *CatalogPinned(const char *reference);
extern bool CatalogOwnsModel(int64 id);
extern void CatalogStoreTuned(const char *name, const char *target, int64 revision,
							  int32 batch_size, const char *schedule, const char *provenance);
extern int64 CatalogQueueTuning(const TuneRequest *request);
extern bool CatalogCancelTuning(int64 job);
extern void CatalogReportNoModel(const char *name) pg_attribute_noreturn();
extern void CatalogStoreProfile(const char *name, int64 revision, int64 num_rows,
								const int64 *node_hits, int64 num_nodes);

/* features.c: feature names between forests, the catalog and columns */
extern bool FeaturesInCatalog(void);
extern Datum FeaturesToArray(const Forest *forest, ForestFeatureField field, bool lenient,
							 bool *isnull);
extern void FeaturesFromArray(Forest *forest, ForestFeatureField field, Datum array);
extern Datum FeaturesClassLabels(const Forest *forest, bool *isnull);
extern bool FeaturesSelectList(StringInfo sql, Relation rel, const char *key_column,
							   const Forest *forest, const char *model);
extern void FeaturesReportColumnType(const char *column, Oid typid);
extern int *FeaturesMatchRow(TupleDesc desc, const char *type_name, const Forest *forest,
							 const char *model);
extern void FeaturesCheckPositions(TupleDesc desc, int first, const Forest *forest,
								   const char *model);

/* catalog_sql.c: statements on the catalog, as the caller or its owner */
typedef struct CatalogSql
{
	Oid			caller;			/* who called: whose rights are checked */
	Oid			saved_user;
	int			saved_context;
	int			guc_nest;		/* where the locked search_path was set */
	bool		as_owner;		/* running as the catalog's owner now */
} CatalogSql;

extern void CatalogSqlBegin(CatalogSql *sql);
extern void CatalogSqlBecomeOwner(CatalogSql *sql);
extern void CatalogSqlEnd(CatalogSql *sql);
extern void CatalogSqlRun(const CatalogSql *sql, const char *query, int nargs,
						  Oid *argtypes, Datum *args, const char *nulls, int expected);
extern Oid	CatalogOwner(void);

/* scan.c */
extern int64 ScanSample(const char *model, Oid relid, const char *key_column,
						ArrayType *feature_columns, const char *query, int64 limit, char **rows);

/* tune.c: a tuning session, in the foreground or in the worker */
typedef struct TuneSession TuneSession;

extern void TuneRequestCheck(TuneRequest *request);
extern void TuneRequestDefaults(TuneRequest *request, const char *model);
extern TuneSession *TuneBegin(const TuneRequest *request, int64 job);
extern int	TuneBatchCount(const TuneSession *session);
extern void TuneBatch(TuneSession *session, int index);
extern void TuneStore(TuneSession *session);
extern char *TuneResultJson(const TuneSession *session);
extern void TuneEnd(TuneSession *session);

/* tune_worker.c */
extern void TuneLaunchAtCommit(void);
extern bool TuneWorkerProgress(int64 job, int32 batch_size, const char *phase, int32 done,
							   int32 planned, double best, double default_us);

/* variant.c */
extern CompiledVariant *ModelVersionVariant(ModelVersion *version, int32 batch_size);
extern CompiledVariant *ModelVersionVariantFor(ModelVersion *version, int32 batch_size,
											   const char *target);
extern void ModelVersionForceSchedule(int64 id, const char *text);
extern const StoredSchedule *ModelVersionStoredSchedule(const ModelVersion *version,
														int32 batch_size, const char *target);
extern void ModelVersionFreeVariants(ModelVersion *version);

/* devices.c: GPU targets from SQL */
extern int	silvan_target;
extern int	silvan_gpu_min_batch;
extern bool silvan_gpu_emulation;
extern void SilvanDefineDeviceGucs(void);
extern const char *SilvanBatchTarget(int32 batch_size);
extern bool SilvanTargetIsCpu(void);
extern const char *SilvanCheckTarget(const char *target, const char *argument, bool to_run);
extern const Target *SilvanTargetFor(const char *target, bool to_run);
extern const char *SilvanTargetArch(const Target *target);
extern GpuDevice *SilvanDevice(GpuKind kind, bool missing_ok);
extern GpuKind SilvanTargetKind(const Target *target);
extern void SilvanRunOnDevice(CompiledVariant *variant, const void *rows, int64 num_rows,
							  void *acc);
extern int	SilvanDeviceSubmit(CompiledVariant *variant, const void *rows, int64 num_rows,
							   void *acc);
extern void SilvanDeviceCollect(CompiledVariant *variant, int slot);
extern void SilvanDeviceCancel(CompiledVariant *variant, int slot);

/*
 * A batch scored on the pipeline thread while the backend goes on
 * (ScoreBatchStart / ScoreBatchFinish); see score.c.
 */
/*
 * Rows whose features are still where the scan found them: row r's
 * row_bytes are copied from sources[r] into rows before the batch is scored
 * (on the pipeline thread, in parallel), unless sources[r] is NULL
 */
typedef struct ScoreGather
{
	char	   *rows;
	const char *const *sources;
	size_t		row_bytes;
} ScoreGather;

typedef struct ScoreTask
{
	ModelVersion *version;
	int32		batch_size;
	const CompiledForest *code;
	CompiledVariant *device;	/* on a GPU: the variant, and its slot there */
	int			device_slot;
	ScoreGather gather;			/* gather.sources NULL: rows are in place */
	const void *rows;
	int64		num_rows;
	void	   *acc;
	double	   *margins;
	bool		predict;		/* margins become predict()'s values (ForestPredictRows) */
	volatile sig_atomic_t stop; /* set by the waiting backend on an interrupt */
	bool		stopped;		/* a range of rows stopped early (atomic) */
	bool		completed;		/* the code ran to the end */
	bool		in_flight;
	double		run_ms;			/* how long the pipeline thread ran it */
} ScoreTask;

/*
 * What scoring has cost this backend so far: the nodes take the share of
 * their own calls (ScoreCostsMark, then ScoreCostsAdd) for EXPLAIN ANALYZE
 */
typedef struct ScoreCosts
{
	double		scoring_ms;		/* compiled code (or the interpreter) running batches */
	int64		codes_obtained; /* schedules' code compiled or loaded (variant.c) */
	double		code_ms;		/* the time that took */
	const char *code_origin;	/* how the last was obtained, in words */
} ScoreCosts;

extern ScoreCosts score_costs;

struct ExplainState;

/* score.c */
extern void ScoreCostsMark(ScoreCosts *mark);
extern void ScoreCostsAdd(ScoreCosts *share, const ScoreCosts *mark);
extern void ScoreCostsCombine(ScoreCosts *into, const ScoreCosts *from);
extern void ScoreCostsExplain(const ScoreCosts *share, struct ExplainState *es);
extern void ScoreBatchStart(ScoreTask *task, ModelVersion *version, int32 batch_size,
							const void *rows, int64 num_rows, void *acc, double *margins,
							bool predict, const ScoreGather *gather);
extern void ScoreBatchFinish(ScoreTask *task);
extern void ScoreBatchAbandon(ScoreTask *task);
extern bool ScoreBatchOnDevice(int32 batch_size);
extern void ScoreBatch(ModelVersion *version, int32 batch_size, const void *rows,
					   int64 num_rows, void *acc, double *margins, bool predict);
extern Datum ScoreResultDatum(ModelVersion *version, ScoreOutput output,
							  const double *margins, double *scratch);
extern void ScoreCheckOutput(ModelVersion *version, ScoreOutput output, const char *name);
extern Oid	ScoreOutputType(ScoreOutput output);
extern Oid	FeatureElementType(Oid typid);

/* silvan.c */
extern char *SilvanFunctionSymbol(Oid funcid, int nargs, bool retset);

/* predict.c */
extern void *PredictRowFill(ArrayType *array, const Forest *forest, const char *name, void *row);

/* predict_row.c: a whole row's columns matched to a model's features */
typedef struct RowFeatures RowFeatures;
extern void PredictRowFromComposite(HeapTupleHeader tuple, const Forest *forest, const char *model,
									RowFeatures **map, MemoryContext cxt, void *row);

extern double FeatureDatumToDouble(Datum value, Oid typid);

/*
 * A value of a feature type (FeatureElementType) as feature i of row, in
 * the forest's precision; NULL is a missing value.  A bigint goes to float
 * in one rounding, as a library's cast of an int64 does.
 */
static inline void
FeaturePut(const Forest *forest, void *row, int32 i, Datum value, bool isnull, Oid typid)
{
	if (forest->precision == FOREST_FLOAT64)
		((double *) row)[i] = isnull ? NAN : typid == FLOAT8OID ? DatumGetFloat8(value) :
			FeatureDatumToDouble(value, typid);
	else if (isnull)
		((float *) row)[i] = NAN;
	else if (typid == FLOAT4OID)
		((float *) row)[i] = DatumGetFloat4(value);
	else if (typid == INT8OID)
		((float *) row)[i] = (float) DatumGetInt64(value);
	else
		((float *) row)[i] = (float) FeatureDatumToDouble(value, typid);
}

/* scan_node.c: the custom scan that streams predict_table */
extern bool silvan_stream_scans;
extern void ScanNodeInit(void);

/* The table functions' batch size when the caller gives none (scan.c) */
#define SILVAN_TABLE_BATCH_SIZE	4096

#endif							/* SILVAN_PG_H */
