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

#include "fmgr.h"

#include "silvan/compiler.h"
#include "silvan/forest.h"
#include "silvan/status.h"

/* GUCs */
extern bool silvan_jit;

/* What a scoring function returns per row */
typedef enum ScoreOutput
{
	SCORE_PREDICT,				/* float8: the library's predict() */
	SCORE_PROBA,				/* float8[]: class probabilities */
	SCORE_RAW					/* float8[]: margins before the transform */
} ScoreOutput;

/*
 * One loaded revision of a model, with its compiled code once compiled.
 * Pinned while a scan uses it; a revision replaced while pinned is freed
 * when the last pin goes.
 */
typedef struct ModelVersion
{
	int64		id;
	int64		revision;
	Forest	   *forest;			/* malloc'd */
	CompiledForest *compiled;	/* NULL until first JIT use */
	bool		interpret_only; /* the compiler declined: interpret */
	int			pins;
	bool		orphaned;		/* no longer current; free at last unpin */
} ModelVersion;

/* silvan.c */
extern void SilvanReportStatus(int elevel, const SilvanStatus *status);

/* cache.c */
extern void ModelCacheInit(void);
extern ModelVersion *ModelCacheLookup(const char *name);
extern uint64 ModelCacheGeneration(void);
extern void ModelVersionPin(ModelVersion *version);
extern void ModelVersionUnpin(ModelVersion *version);
extern Oid	SilvanCatalogRelid(const char *relname);

/* score.c */
extern void ScoreBatch(ModelVersion *version, const void *rows, int64 num_rows,
					   void *acc, double *margins);
extern Datum ScoreResultDatum(ModelVersion *version, ScoreOutput output,
							  const double *margins, double *scratch);
extern void ScoreCheckOutput(ModelVersion *version, ScoreOutput output, const char *name);
extern Oid	FeatureElementType(Oid typid);
extern double FeatureDatumToDouble(Datum value, Oid typid);

#endif							/* SILVAN_PG_H */
