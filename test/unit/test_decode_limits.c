/*
 * test_decode_limits.c
 *		What reading a model may cost: memory in proportion to its bytes,
 *		and a prompt stop when the statement is cancelled.
 *
 * Memory.  Each parse runs in a forked child, which resets its peak RSS
 * (/proc/self/clear_refs), parses, and reports VmHWM above the RSS it had
 * just before: the input is already resident, so the figure is what the
 * reader itself took.  It must stay within PEAK_PER_BYTE (4) times the
 * input's bytes plus PEAK_SLACK (the readers' 8 MB floor and allocator
 * slack), for every format and every XGBoost read mode: on the shared
 * real models and on large benign models generated here, which must
 * parse, and on hostile models generated here (about 30 MB each: empty
 * ONNX attributes, packed and unpacked varints, unknown fields; XGBoost
 * documents whose values json-c would inflate, trees json-c must read,
 * dense trees, category sets; LightGBM trees denser than any writer's,
 * huge feature lists), which must fail cleanly, most of them with
 * SILVAN_ERROR_LIMIT, lowercase, naming the numbers.  A child that would
 * exceed four times its input's bytes plus 256 MB of address space fails
 * its allocations instead of eating the machine (RLIMIT_AS).
 *
 * Cancellation.  A check registered with CancelSetCheck starts answering
 * true when a timer thread sets a flag, at several points of the parse of
 * a large benign model of each format (and of the XGBoost reader's json-c
 * stream mode); the parse must return SILVAN_ERROR_CANCELED within
 * CANCEL_LATENCY seconds of the flag.  Then the check fires on its k-th
 * call, for k at several fractions of the calls a whole parse makes, and
 * the parse must leave the heap as it found it (mallinfo2, with malloc's
 * thread cache off).  The binary form's reader and writer stop on a check
 * that fires on its second call.
 *
 * Arguments name the parts to run (shared, onnx, lightgbm, xgboost,
 * cancel; all by default) and a number scales the generated models:
 * "test_decode_limits cancel 0.03" is small enough for valgrind's leak
 * check (which slows everything too much for the timings, so a scaled
 * run does not check them).
 */
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "silvan/cancel.h"
#include "silvan/parse.h"
#include "unit.h"

#define MIB				((size_t) 1 << 20)
/* The bound: peak RSS above the baseline <= PEAK_PER_BYTE * bytes + PEAK_SLACK */
#define PEAK_PER_BYTE	4
#define PEAK_SLACK		(16 * MIB)
/* Size of the generated hostile and benign models */
#define HOSTILE_BYTES	(30 * MIB)
/* Seconds from the cancel flag to the parse's return */
#define CANCEL_LATENCY	0.2

/* Models are generated this many times their usual size ("cancel SCALE") */
static double scale = 1.0;

/* ---------- byte buffers ---------- */

typedef struct Buf
{
	char	   *p;
	size_t		len;
	size_t		cap;
} Buf;

/* Append n bytes */
static void
Put(Buf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 4096;

		while (cap < b->len + n + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (b->p == NULL)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Append a C string */
static void
PutS(Buf *b, const char *s)
{
	Put(b, s, strlen(s));
}

/* Append formatted text */
static void
PutF(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
PutF(Buf *b, const char *fmt,...)
{
	char		tmp[512];
	va_list		args;
	int			n;

	va_start(args, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, args);
	va_end(args);
	Put(b, tmp, (size_t) n);
}

/* Append the n bytes at s until the buffer holds at least target bytes */
static void
RepeatN(Buf *b, const char *s, size_t n, size_t target)
{
	while (b->len < target)
		Put(b, s, n);
}

/* Append s until the buffer holds at least target bytes */
static void
Repeat(Buf *b, const char *s, size_t target)
{
	RepeatN(b, s, strlen(s), target);
}

/* ---------- measuring a parse in a child ---------- */

/* What a child reports */
typedef struct Measured
{
	bool		ran;			/* the child reported back */
	bool		parsed;
	int64_t		peak;			/* bytes above the baseline */
	double		seconds;
	SilvanStatus status;
} Measured;

/* Seconds on the monotonic clock */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A "Vm...:" figure of /proc/self/status, in bytes */
static int64_t
ProcBytes(const char *field)
{
	FILE	   *f = fopen("/proc/self/status", "r");
	char		line[256];
	int64_t		v = -1;

	while (f != NULL && fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			v = atoll(line + strlen(field)) * 1024;
	if (f != NULL)
		fclose(f);
	return v;
}

/* Parse in a child; report its peak RSS above the RSS before the parse */
static Measured
Measure(const char *text, size_t len, ModelFormat format, XgboostReadMode mode)
{
	Measured	m = {0};
	int			fds[2];
	pid_t		pid;

	if (pipe(fds) != 0)
		abort();
	fflush(stdout);
	pid = fork();
	if (pid == 0)
	{
		Measured	r = {0};
		struct rlimit lim;
		FILE	   *clear;
		int64_t		base;
		double		t0;
		Forest	   *f;

		close(fds[0]);
		lim.rlim_cur = lim.rlim_max = (rlim_t) (ProcBytes("VmSize:") + 4 * (int64_t) len + 256 * (int64_t) MIB);
		setrlimit(RLIMIT_AS, &lim);
		alarm(120);
		ParseXgboostReadMode(mode);
		malloc_trim(0);
		if ((clear = fopen("/proc/self/clear_refs", "w")) != NULL)
		{
			fputs("5", clear);
			fclose(clear);
		}
		base = ProcBytes("VmRSS:");
		t0 = Now();
		f = ParseModel(text, len, format, NULL, &r.status);
		r.seconds = Now() - t0;
		r.peak = ProcBytes("VmHWM:") - base;
		r.parsed = f != NULL;
		r.ran = true;
		if (write(fds[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &m, sizeof(m)) != sizeof(m))
		m.ran = false;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return m;
}

/* What a case must do besides staying within the bound */
typedef enum Expect
{
	EXPECT_PARSE,				/* benign: must parse */
	EXPECT_LIMIT,				/* hostile: must be refused for memory */
	EXPECT_CLEAN				/* hostile: must fail cleanly or parse */
} Expect;

static const char *mode_names[] = {"flat", "stream", "whole"};

/* Does a LIMIT status read as the readers write it? */
static bool
LimitStatusWellFormed(const SilvanStatus *st, size_t len)
{
	char		bytes[32];

	snprintf(bytes, sizeof(bytes), "%zu", len);
	for (const char *p = st->message; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			return false;
	return st->message[0] != '\0' && strstr(st->detail, bytes) != NULL &&
		strstr(st->detail, "budget") != NULL;
}

/* Measure one case and check it against the bound and the expectation */
static void
CheckCase(const char *label, const char *text, size_t len, ModelFormat format,
		  XgboostReadMode mode, Expect expect)
{
	Measured	m = Measure(text, len, format, mode);
	int64_t		bound = PEAK_PER_BYTE * (int64_t) len + (int64_t) PEAK_SLACK;

	printf("  %-34s %-6s %9zu bytes  peak %10lld  %6.2f x  %6.3f s  %s%s%s\n",
		   label, format == MODEL_FORMAT_XGBOOST_JSON ? mode_names[mode] : "",
		   len, (long long) m.peak, (double) m.peak / (double) len, m.seconds,
		   !m.ran ? "child died" : m.parsed ? "parsed" : m.status.message,
		   m.ran && !m.parsed ? ": " : "", m.ran && !m.parsed ? m.status.detail : "");
	CHECK_MSG(m.ran, "%s: the child died (out of address space or a crash)", label);
	if (!m.ran)
		return;
	CHECK_MSG(m.peak <= bound, "%s (%s): peak %lld bytes above the baseline; the bound is %lld",
			  label, mode_names[mode], (long long) m.peak, (long long) bound);
	if (expect == EXPECT_PARSE)
		CHECK_MSG(m.parsed, "%s (%s): a benign model failed: %s: %s", label,
				  mode_names[mode], m.status.message, m.status.detail);
	if (expect == EXPECT_LIMIT)
		CHECK_MSG(!m.parsed && m.status.kind == SILVAN_ERROR_LIMIT,
				  "%s (%s): expected a memory refusal, got %s (kind %d)", label,
				  mode_names[mode], m.parsed ? "a forest" : m.status.message, m.status.kind);
	if (!m.parsed && m.status.kind == SILVAN_ERROR_LIMIT)
		CHECK_MSG(LimitStatusWellFormed(&m.status, len), "%s: badly formed limit status: %s: %s",
				  label, m.status.message, m.status.detail);
	if (!m.parsed)
		CHECK_MSG(m.status.kind != SILVAN_OK && m.status.kind != SILVAN_ERROR_INTERNAL &&
				  m.status.kind != SILVAN_ERROR_OUT_OF_MEMORY,
				  "%s: not a clean failure: kind %d: %s", label, m.status.kind, m.status.message);
}

/* Check an XGBoost case in every read mode */
static void
CheckXgbCase(const char *label, const Buf *b, Expect flat, Expect whole)
{
	CheckCase(label, b->p, b->len, MODEL_FORMAT_XGBOOST_JSON, XGBOOST_READ_FLAT, flat);
	CheckCase(label, b->p, b->len, MODEL_FORMAT_XGBOOST_JSON, XGBOOST_READ_STREAM,
			  flat == EXPECT_PARSE ? EXPECT_CLEAN : flat);
	CheckCase(label, b->p, b->len, MODEL_FORMAT_XGBOOST_JSON, XGBOOST_READ_WHOLE, whole);
}

/* ---------- XGBoost JSON ---------- */

/* The document around the trees: head, then the trees, then the tail */
static void
XgbHead(Buf *b, int64_t num_trees, int num_feature, const char *learner_extra)
{
	PutS(b, "{\"learner\":{");
	PutS(b, learner_extra);
	if (strstr(learner_extra, "\"feature_names\"") == NULL)
		PutS(b, "\"feature_names\":[],\"feature_types\":[],");
	PutF(b, "\"attributes\":{},\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\","
		 "\"num_trees\":\"%lld\"},\"tree_info\":[", (long long) num_trees);
	for (int64_t t = 0; t < num_trees; t++)
		PutS(b, t ? ",0" : "0");
	PutS(b, "],\"trees\":[");
	(void) num_feature;
}

/* Close the trees and the document */
static void
XgbTail(Buf *b, int num_feature)
{
	PutF(b, "]},\"name\":\"gbtree\"},\"learner_model_param\":{\"base_score\":\"5E-1\","
		 "\"boost_from_average\":\"1\",\"num_class\":\"0\",\"num_feature\":\"%d\","
		 "\"num_target\":\"1\"},\"objective\":{\"name\":\"reg:squarederror\","
		 "\"reg_loss_param\":{\"scale_pos_weight\":\"1\"}}},\"version\":[1,7,4]}", num_feature);
}

/* A number as XGBoost writes one */
static void
XgbNumber(Buf *b, uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	PutF(b, "%.8E", (double) ((*state >> 20) % 2000000) / 1e6 - 1.0);
}

/* One complete tree of the given depth, with every array XGBoost 1.7 writes */
static void
XgbTree(Buf *b, int64_t id, int depth, int num_feature, uint64_t *state)
{
	int64_t		n = ((int64_t) 2 << depth) - 1;
	int64_t		inner = ((int64_t) 1 << depth) - 1;
	static const char *arrays[] = {"base_weights", "loss_changes", "sum_hessian"};

	PutS(b, id ? ",{" : "{");
	for (size_t a = 0; a < 3; a++)
	{
		PutF(b, "\"%s\":[", arrays[a]);
		for (int64_t i = 0; i < n; i++)
		{
			if (i)
				PutS(b, ",");
			XgbNumber(b, state);
		}
		PutS(b, a == 0 ? "],\"categories\":[],\"categories_nodes\":[],\"categories_segments\":[],"
			 "\"categories_sizes\":[],\"default_left\":[" : "],");
		if (a == 0)
		{
			for (int64_t i = 0; i < n; i++)
				PutS(b, i ? (i < inner ? ",1" : ",0") : "1");
			PutF(b, "],\"id\":%lld,\"left_children\":[", (long long) id);
			for (int64_t i = 0; i < n; i++)
				PutF(b, "%s%lld", i ? "," : "", (long long) (i < inner ? 2 * i + 1 : -1));
			PutS(b, "],");
		}
	}
	PutS(b, "\"parents\":[");
	for (int64_t i = 0; i < n; i++)
		PutF(b, "%s%lld", i ? "," : "", (long long) (i ? (i - 1) / 2 : 2147483647));
	PutS(b, "],\"right_children\":[");
	for (int64_t i = 0; i < n; i++)
		PutF(b, "%s%lld", i ? "," : "", (long long) (i < inner ? 2 * i + 2 : -1));
	PutS(b, "],\"split_conditions\":[");
	for (int64_t i = 0; i < n; i++)
	{
		if (i)
			PutS(b, ",");
		XgbNumber(b, state);
	}
	PutS(b, "],\"split_indices\":[");
	for (int64_t i = 0; i < n; i++)
		PutF(b, "%s%lld", i ? "," : "", (long long) (i < inner ? i % num_feature : 0));
	PutS(b, "],\"split_type\":[");
	for (int64_t i = 0; i < n; i++)
		PutS(b, i ? ",0" : "0");
	PutF(b, "],\"tree_param\":{\"num_deleted\":\"0\",\"num_feature\":\"%d\",\"num_nodes\":\"%lld\","
		 "\"size_leaf_vector\":\"0\"}}", num_feature, (long long) n);
}

/* A benign model: num_trees trees of the given depth, as XGBoost 1.7 writes them */
static void
XgbBenign(Buf *b, int64_t num_trees, int depth)
{
	uint64_t	state = 42;

	XgbHead(b, num_trees, 28, "");
	for (int64_t t = 0; t < num_trees; t++)
		XgbTree(b, t, depth, 28, &state);
	XgbTail(b, 28);
}

/* A small valid model with extra members in the learner (learner_extra ends in ",") */
static void
XgbWithLearnerExtra(Buf *b, const char *open, const char *item, const char *close)
{
	Buf			extra = {0};
	uint64_t	state = 7;

	PutS(&extra, "\"junk\":");
	PutS(&extra, open);
	PutS(&extra, item);
	while (extra.len < (size_t) (HOSTILE_BYTES * scale))
	{
		PutS(&extra, ",");
		PutS(&extra, item);
	}
	PutS(&extra, close);
	PutS(&extra, ",");
	XgbHead(b, 1, 2, extra.p);
	XgbTree(b, 0, 1, 2, &state);
	XgbTail(b, 2);
	free(extra.p);
}

/*
 * One tree of n nodes, all leaves (XGBoost's pruner leaves deleted nodes
 * so), in the fewest bytes the required arrays allow; extra goes into the
 * tree object
 */
static void
XgbDenseTree(Buf *b, int64_t n, const char *extra)
{
	static const char *arrays[] = {"left_children", "right_children", "split_indices",
	"split_conditions", "default_left"};

	XgbHead(b, 1, 2, "");
	PutF(b, "{%s\"tree_param\":{\"num_nodes\":\"%lld\"}", extra, (long long) n);
	for (size_t a = 0; a < 5; a++)
	{
		PutF(b, ",\"%s\":[", arrays[a]);
		for (int64_t i = 0; i < n; i++)
			PutS(b, a < 2 ? (i ? ",-1" : "-1") : (i ? ",0" : "0"));
		PutS(b, "]");
	}
	PutS(b, "}");
	XgbTail(b, 2);
}

/* Trees of one categorical split whose set holds the largest category */
static void
XgbCategoryBlowup(Buf *b, int64_t num_trees)
{
	XgbHead(b, num_trees, 2, "");
	for (int64_t t = 0; t < num_trees; t++)
		PutF(b, "%s{\"tree_param\":{\"num_nodes\":\"3\"},\"left_children\":[1,-1,-1],"
			 "\"right_children\":[2,-1,-1],\"split_indices\":[0,0,0],\"split_conditions\":[0,1,2],"
			 "\"default_left\":[0,0,0],\"split_type\":[1,0,0],\"categories\":[16777215],"
			 "\"categories_nodes\":[0],\"categories_segments\":[0],\"categories_sizes\":[1]}",
			 t ? "," : "");
	XgbTail(b, 2);
}

/* A model with num_feature features named in feature_names */
static void
XgbFeatureNames(Buf *b, int64_t num_feature)
{
	Buf			extra = {0};
	uint64_t	state = 9;

	PutS(&extra, "\"feature_names\":[");
	for (int64_t i = 0; i < num_feature; i++)
		PutF(&extra, "%s\"f%llx\"", i ? "," : "", (long long) i);
	PutS(&extra, "],");
	XgbHead(b, 1, (int) num_feature, extra.p);
	XgbTree(b, 0, 1, 2, &state);
	XgbTail(b, (int) num_feature);
	free(extra.p);
}

/* Hostile and benign XGBoost documents */
static void
CheckXgboost(void)
{
	size_t		target = (size_t) (HOSTILE_BYTES * scale);
	Buf			b = {0};

	printf("XGBoost JSON\n");
	XgbBenign(&b, (int64_t) (150 * scale) + 1, 10);
	CheckXgbCase("benign: 10-deep trees", &b, EXPECT_PARSE, EXPECT_CLEAN);
	b.len = 0;
	XgbBenign(&b, 1, 17);
	CheckXgbCase("benign: one 17-deep tree", &b, EXPECT_PARSE, EXPECT_CLEAN);
	b.len = 0;
	XgbWithLearnerExtra(&b, "[", "0", "]");
	CheckXgbCase("learner: [0,0,...]", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbWithLearnerExtra(&b, "[", "{}", "]");
	CheckXgbCase("learner: [{},{},...]", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbWithLearnerExtra(&b, "[", "[[[[[[[[[[[[[0]]]]]]]]]]]]]", "]");
	CheckXgbCase("learner: nested arrays", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbWithLearnerExtra(&b, "{", "\"k\":0", "}");
	CheckXgbCase("learner: one key repeated", &b, EXPECT_CLEAN, EXPECT_CLEAN);
	b.len = 0;
	XgbWithLearnerExtra(&b, "\"", "\\u0041\\n", "\"");
	CheckXgbCase("learner: escaped string", &b, EXPECT_CLEAN, EXPECT_CLEAN);
	b.len = 0;
	{
		Buf			doc = {0};

		XgbWithLearnerExtra(&doc, "[", "0.5", "]");
		PutS(&b, "/* not strict JSON */");
		Put(&b, doc.p, doc.len);
		free(doc.p);
	}
	CheckXgbCase("comment, then [0.5,...]", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbDenseTree(&b, (int64_t) (target / 12), "");
	CheckXgbCase("dense tree", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbDenseTree(&b, (int64_t) (target / 12), "\"x\":{\"y\":{}},");
	CheckXgbCase("dense tree json-c must read", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbCategoryBlowup(&b, (int64_t) (target / 300));
	CheckXgbCase("category 16777215 in every tree", &b, EXPECT_LIMIT, EXPECT_LIMIT);
	b.len = 0;
	XgbFeatureNames(&b, (int64_t) (target / 10));
	CheckXgbCase("feature_names", &b, EXPECT_CLEAN, EXPECT_CLEAN);
	free(b.p);
}

/* ---------- LightGBM text ---------- */

/* The header of a regression model with num_feature features */
static void
LgbHeader(Buf *b, int num_feature, int64_t num_trees, const char *names)
{
	PutF(b, "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
		 "max_feature_idx=%d\nobjective=regression\n", num_feature - 1);
	if (names != NULL)
		PutS(b, names);
	else
	{
		PutS(b, "feature_names=");
		for (int i = 0; i < num_feature; i++)
			PutF(b, "%sColumn_%d", i ? " " : "", i);
		PutS(b, "\n");
	}
	PutS(b, "feature_infos=none\n");
	if (num_trees > 0)
	{
		PutS(b, "tree_sizes=");
		for (int64_t t = 0; t < num_trees; t++)
			PutS(b, t ? " 1" : "1");
		PutS(b, "\n");
	}
	PutS(b, "\n");
}

/* A list of count numbers of a balanced tree's nodes */
static void
LgbList(Buf *b, const char *key, int64_t count, int kind, int64_t leaves, uint64_t *state)
{
	PutF(b, "%s=", key);
	for (int64_t i = 0; i < count; i++)
	{
		int64_t		inner = leaves - 1;
		int64_t		c = kind == 1 ? 2 * i + 1 : 2 * i + 2;

		if (i)
			PutS(b, " ");
		if (kind == 1 || kind == 2)		/* children: inner nodes, then ~leaf */
			PutF(b, "%lld", (long long) (c < inner ? c : ~(c - inner)));
		else if (kind == 3)
			PutF(b, "%lld", (long long) (i % 28));
		else if (kind == 4)
			PutS(b, "2");
		else if (kind == 5)
			PutF(b, "%lld", (long long) (1 + (*state >> 40) % 1000));
		else
		{
			*state = *state * 6364136223846793005ull + 1442695040888963407ull;
			PutF(b, "%.17g", (double) ((*state >> 11) % 100000) / 7919.0 - 6.0);
		}
	}
	PutS(b, "\n");
}

/* One balanced tree of the given number of leaves (a power of two), as LightGBM writes it */
static void
LgbTree(Buf *b, int64_t index, int64_t leaves, uint64_t *state)
{
	int64_t		inner = leaves - 1;

	PutF(b, "Tree=%lld\nnum_leaves=%lld\nnum_cat=0\n", (long long) index, (long long) leaves);
	LgbList(b, "split_feature", inner, 3, leaves, state);
	LgbList(b, "split_gain", inner, 0, leaves, state);
	LgbList(b, "threshold", inner, 0, leaves, state);
	LgbList(b, "decision_type", inner, 4, leaves, state);
	LgbList(b, "left_child", inner, 1, leaves, state);
	LgbList(b, "right_child", inner, 2, leaves, state);
	LgbList(b, "leaf_value", leaves, 0, leaves, state);
	LgbList(b, "leaf_weight", leaves, 0, leaves, state);
	LgbList(b, "leaf_count", leaves, 5, leaves, state);
	LgbList(b, "internal_value", inner, 0, leaves, state);
	LgbList(b, "internal_weight", inner, 0, leaves, state);
	LgbList(b, "internal_count", inner, 5, leaves, state);
	PutS(b, "is_linear=0\nshrinkage=0.1\n\n\n");
}

/* A benign model: num_trees trees of the given leaves */
static void
LgbBenign(Buf *b, int64_t num_trees, int64_t leaves)
{
	uint64_t	state = 5;

	LgbHeader(b, 28, num_trees, NULL);
	for (int64_t t = 0; t < num_trees; t++)
		LgbTree(b, t, leaves, &state);
	PutS(b, "end of trees\n\nfeature_importances:\n\nparameters:\n[boosting: gbdt]\n\nend of parameters\n");
}

/* One tree of the given leaves in the fewest bytes: a chain, one leaf at each split */
static void
LgbDense(Buf *b, int64_t leaves)
{
	LgbHeader(b, 1, 1, NULL);
	PutF(b, "Tree=0\nnum_leaves=%lld\nsplit_feature=", (long long) leaves);
	for (int64_t i = 0; i < leaves - 1; i++)
		PutS(b, i ? " 0" : "0");
	PutS(b, "\nthreshold=");
	for (int64_t i = 0; i < leaves - 1; i++)
		PutS(b, i ? " 0" : "0");
	PutS(b, "\nleft_child=");
	for (int64_t i = 0; i < leaves - 1; i++)
		PutF(b, "%s%lld", i ? " " : "", (long long) ~i);
	PutS(b, "\nright_child=");
	for (int64_t i = 0; i < leaves - 1; i++)
		PutF(b, "%s%lld", i ? " " : "", (long long) (i + 1 < leaves - 1 ? i + 1 : ~(i + 1)));
	PutS(b, "\nleaf_value=");
	for (int64_t i = 0; i < leaves; i++)
		PutS(b, i ? " 0" : "0");
	PutS(b, "\n\nend of trees\n");
}

/* One categorical split whose set has the given number of words */
static void
LgbCategoryWords(Buf *b, int64_t words)
{
	LgbHeader(b, 1, 1, NULL);
	PutF(b, "Tree=0\nnum_leaves=2\nnum_cat=1\nsplit_feature=0\nthreshold=0\ndecision_type=1\n"
		 "left_child=-1\nright_child=-2\nleaf_value=0 1\ncat_boundaries=0 %lld\ncat_threshold=",
		 (long long) words);
	for (int64_t i = 0; i < words; i++)
		PutS(b, i ? " 0" : "1");
	PutS(b, "\n\nend of trees\n");
}

/* Hostile and benign LightGBM text */
static void
CheckLightgbm(void)
{
	size_t		target = (size_t) (HOSTILE_BYTES * scale);
	Buf			b = {0};
	Buf			names = {0};
	uint64_t	state = 3;
	int64_t		n;

	printf("LightGBM text\n");
	LgbBenign(&b, (int64_t) (1000 * scale) + 1, 256);
	CheckCase("benign: 256-leaf trees", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_PARSE);
	b.len = 0;
	LgbHeader(&b, 28, 1, NULL);
	LgbTree(&b, 0, (int64_t) 1 << (int) (17 + log2(scale > 0.01 ? scale : 0.01)), &state);
	PutS(&b, "end of trees\n");
	CheckCase("benign: one 128k-leaf tree", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_PARSE);
	b.len = 0;
	LgbDense(&b, (int64_t) (target / 14));
	CheckCase("dense chain tree", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_LIMIT);
	b.len = 0;
	LgbHeader(&b, 2, 1, NULL);
	PutS(&b, "Tree=0\nnum_leaves=1073741824\nleaf_value=0\n\nend of trees\n");
	CheckCase("num_leaves=2^30 in 1 kB", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_CLEAN);
	b.len = 0;
	LgbHeader(&b, 2, 1, NULL);
	PutS(&b, "Tree=0\nnum_leaves=1\nleaf_value=");
	Repeat(&b, "0 ", target);
	PutS(&b, "\n\nend of trees\n");
	CheckCase("30 MB line", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_CLEAN);
	b.len = 0;
	LgbCategoryWords(&b, (int64_t) (target / 2));
	CheckCase("a set of 15M words", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_CLEAN);
	b.len = 0;
	LgbHeader(&b, 2, 0, NULL);
	for (n = 0; b.len < target; n++)
		PutF(&b, "Tree=%lld\nnum_leaves=1\nleaf_value=%lld\n\n", (long long) n, (long long) n);
	PutS(&b, "end of trees\n");
	CheckCase("a million one-leaf trees", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_CLEAN);
	b.len = 0;
	n = (int64_t) (target / 8);
	if (n > (1 << 24))
		n = 1 << 24;
	PutS(&names, "feature_names=");
	for (int64_t i = 0; i < n; i++)
		PutF(&names, "%s%llx", i ? " " : "", (long long) i);
	PutS(&names, "\n");
	LgbHeader(&b, (int) n, 1, names.p);
	PutS(&b, "Tree=0\nnum_leaves=1\nleaf_value=0\n\nend of trees\n");
	CheckCase("feature_names of 4M names", b.p, b.len, MODEL_FORMAT_LIGHTGBM_TEXT, 0, EXPECT_CLEAN);
	free(names.p);
	free(b.p);
}

/* ---------- ONNX ---------- */

/* Append a varint */
static void
PutVarint(Buf *b, uint64_t v)
{
	uint8_t		bytes[10];
	int			n = 0;

	do
	{
		bytes[n++] = (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	Put(b, bytes, n);
}

/* Append a field tag */
static void
PutTag(Buf *b, int field, int wire)
{
	PutVarint(b, ((uint64_t) field << 3) | (uint64_t) wire);
}

/* Append a length-delimited field */
static void
PutLen(Buf *b, int field, const void *data, size_t n)
{
	PutTag(b, field, 2);
	PutVarint(b, n);
	Put(b, data, n);
}

/* Append a string field */
static void
PutStr(Buf *b, int field, const char *s)
{
	PutLen(b, field, s, strlen(s));
}

/* Append a varint field */
static void
PutInt(Buf *b, int field, uint64_t v)
{
	PutTag(b, field, 0);
	PutVarint(b, v);
}

/* Append a float field (wire type 5) */
static void
PutFloat(Buf *b, int field, float f)
{
	PutTag(b, field, 5);
	Put(b, &f, 4);
}

/* Wrap a node into a ModelProto (ai.onnx.ml opset 3, input X of num_feature floats) */
static void
OnnxModel(Buf *out, const Buf *node, int num_feature)
{
	Buf			opset = {0},
				graph = {0},
				input = {0},
				type = {0},
				tensor = {0},
				shape = {0},
				dim = {0};

	PutInt(out, 1, 8);
	PutStr(&opset, 1, "");
	PutInt(&opset, 2, 17);
	PutLen(out, 8, opset.p, opset.len);
	opset.len = 0;
	PutStr(&opset, 1, "ai.onnx.ml");
	PutInt(&opset, 2, 3);
	PutLen(out, 8, opset.p, opset.len);
	PutLen(&graph, 1, node->p, node->len);
	PutStr(&graph, 2, "g");
	PutStr(&dim, 2, "N");
	PutLen(&shape, 1, dim.p, dim.len);
	dim.len = 0;
	PutInt(&dim, 1, (uint64_t) num_feature);
	PutLen(&shape, 1, dim.p, dim.len);
	PutInt(&tensor, 1, 1);
	PutLen(&tensor, 2, shape.p, shape.len);
	PutLen(&type, 1, tensor.p, tensor.len);
	PutStr(&input, 1, "X");
	PutLen(&input, 2, type.p, type.len);
	PutLen(&graph, 11, input.p, input.len);
	PutLen(out, 7, graph.p, graph.len);
	free(opset.p);
	free(graph.p);
	free(input.p);
	free(type.p);
	free(tensor.p);
	free(shape.p);
	free(dim.p);
}

/* Start a TreeEnsembleRegressor node */
static void
OnnxNodeHead(Buf *node)
{
	PutStr(node, 1, "X");
	PutStr(node, 2, "variable");
	PutStr(node, 3, "TreeEnsembleRegressor");
	PutStr(node, 4, "TreeEnsembleRegressor");
	PutStr(node, 7, "ai.onnx.ml");
}

/* An ints attribute written as converters write it (unpacked) */
static void
OnnxInts(Buf *node, const char *name, const int64_t *v, int64_t n)
{
	Buf			a = {0};

	PutStr(&a, 1, name);
	PutInt(&a, 20, 7);
	for (int64_t i = 0; i < n; i++)
		PutInt(&a, 8, (uint64_t) v[i]);
	PutLen(node, 5, a.p, a.len);
	free(a.p);
}

/* A floats attribute */
static void
OnnxFloats(Buf *node, const char *name, const float *v, int64_t n)
{
	Buf			a = {0};

	PutStr(&a, 1, name);
	PutInt(&a, 20, 6);
	for (int64_t i = 0; i < n; i++)
		PutFloat(&a, 7, v[i]);
	PutLen(node, 5, a.p, a.len);
	free(a.p);
}

/* A benign regressor: num_trees complete trees of the given depth */
static void
OnnxBenign(Buf *out, int64_t num_trees, int depth)
{
	int64_t		per = ((int64_t) 2 << depth) - 1;
	int64_t		inner = ((int64_t) 1 << depth) - 1;
	int64_t		n = num_trees * per;
	int64_t		w = num_trees * (per - inner);
	int64_t    *cols[6];
	int64_t    *wcols[3];
	float	   *values = malloc(sizeof(float) * n);
	float	   *weights = malloc(sizeof(float) * w);
	Buf			node = {0},
				a = {0};
	static const char *names[] = {"nodes_treeids", "nodes_nodeids", "nodes_featureids",
	"nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true"};
	static const char *wnames[] = {"target_treeids", "target_nodeids", "target_ids"};
	int64_t		k = 0;

	for (int c = 0; c < 6; c++)
		cols[c] = malloc(sizeof(int64_t) * n);
	for (int c = 0; c < 3; c++)
		wcols[c] = malloc(sizeof(int64_t) * w);
	PutStr(&a, 1, "nodes_modes");
	PutInt(&a, 20, 8);
	for (int64_t t = 0, i = 0; t < num_trees; t++)
		for (int64_t j = 0; j < per; j++, i++)
		{
			bool		leaf = j >= inner;

			cols[0][i] = t;
			cols[1][i] = j;
			cols[2][i] = leaf ? 0 : j % 28;
			cols[3][i] = leaf ? 0 : 2 * j + 1;
			cols[4][i] = leaf ? 0 : 2 * j + 2;
			cols[5][i] = 0;
			values[i] = leaf ? 0.0f : (float) (j % 97) / 13.0f;
			PutStr(&a, 9, leaf ? "LEAF" : "BRANCH_LEQ");
			if (leaf)
			{
				wcols[0][k] = t;
				wcols[1][k] = j;
				wcols[2][k] = 0;
				weights[k++] = (float) (j % 89) / 1000.0f;
			}
		}
	OnnxNodeHead(&node);
	for (int c = 0; c < 6; c++)
		OnnxInts(&node, names[c], cols[c], n);
	PutLen(&node, 5, a.p, a.len);
	OnnxFloats(&node, "nodes_values", values, n);
	for (int c = 0; c < 3; c++)
		OnnxInts(&node, wnames[c], wcols[c], w);
	OnnxFloats(&node, "target_weights", weights, w);
	a.len = 0;
	PutStr(&a, 1, "n_targets");
	PutInt(&a, 20, 2);
	PutInt(&a, 3, 1);
	PutLen(&node, 5, a.p, a.len);
	OnnxModel(out, &node, 28);
	for (int c = 0; c < 6; c++)
		free(cols[c]);
	for (int c = 0; c < 3; c++)
		free(wcols[c]);
	free(values);
	free(weights);
	free(node.p);
	free(a.p);
}

/* A regressor node whose one attribute (named name) is item repeated */
static void
OnnxRepeatedAttribute(Buf *out, const char *name, int type, const void *item, size_t n,
					  bool packed)
{
	size_t		target = (size_t) (HOSTILE_BYTES * scale);
	Buf			a = {0},
				node = {0},
				payload = {0};

	PutStr(&a, 1, name);
	PutInt(&a, 20, (uint64_t) type);
	if (packed)
	{
		while (payload.len < target)
			Put(&payload, item, n);
		PutLen(&a, 8, payload.p, payload.len);
	}
	else
		while (a.len < target)
			Put(&a, item, n);
	OnnxNodeHead(&node);
	PutLen(&node, 5, a.p, a.len);
	OnnxModel(out, &node, 2);
	free(a.p);
	free(node.p);
	free(payload.p);
}

/* Hostile and benign ONNX models */
static void
CheckOnnx(void)
{
	size_t		target = (size_t) (HOSTILE_BYTES * scale);
	Buf			b = {0},
				node = {0};

	printf("ONNX\n");
	OnnxBenign(&b, (int64_t) (1000 * scale) + 1, 9);
	CheckCase("benign: 1000 9-deep trees", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_PARSE);
	b.len = 0;
	OnnxNodeHead(&node);
	RepeatN(&node, "\x2a\x00", 2, target);
	OnnxModel(&b, &node, 2);
	CheckCase("15M empty attributes", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_LIMIT);
	b.len = 0;
	node.len = 0;
	OnnxNodeHead(&node);
	RepeatN(&node, "\x78\x00", 2, target);
	OnnxModel(&b, &node, 2);
	CheckCase("15M unknown fields in a node", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_LIMIT);
	b.len = 0;
	node.len = 0;
	OnnxNodeHead(&node);
	PutLen(&node, 5, "", 0);
	RepeatN(&node, "\x0a\x00", 2, target);
	OnnxModel(&b, &node, 2);
	CheckCase("15M empty nodes", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_LIMIT);
	b.len = 0;
	OnnxRepeatedAttribute(&b, "nodes_treeids", 7, "\x00", 1, true);
	CheckCase("30M packed one-byte varints", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_LIMIT);
	b.len = 0;
	OnnxRepeatedAttribute(&b, "nodes_treeids", 7, "\x40\x00", 2, false);
	CheckCase("15M unpacked varints", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_CLEAN);
	b.len = 0;
	OnnxRepeatedAttribute(&b, "nodes_modes", 8, "\x4a\x00", 2, false);
	CheckCase("15M empty strings", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_CLEAN);
	b.len = 0;
	OnnxRepeatedAttribute(&b, "nodes_hitrates", 8, "\x4a\x00", 2, false);
	CheckCase("15M empty strings, unread", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_CLEAN);
	b.len = 0;
	OnnxRepeatedAttribute(&b, "nodes_values_as_tensor", 4, "\x52\x00", 2, false);
	CheckCase("15M empty tensors", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_LIMIT);
	b.len = 0;
	OnnxRepeatedAttribute(&b, "nodes_values", 6, "\x3d\x00\x00\x00\x00", 5, false);
	CheckCase("6M unpacked floats", b.p, b.len, MODEL_FORMAT_ONNX, 0, EXPECT_CLEAN);
	free(node.p);
	free(b.p);
}

/* ---------- the shared models ---------- */

/* Every shared model of a format, parsed (XGBoost in every mode) */
static void
CheckSharedModels(void)
{
	static const struct
	{
		const char *path;
		ModelFormat format;
	}			models[] = {
		{"asprasad_treebeard/xgb_models--higgs_xgb_model_save.json", MODEL_FORMAT_XGBOOST_JSON},
		{"asprasad_treebeard/xgb_models--airline_xgb_model_save.json", MODEL_FORMAT_XGBOOST_JSON},
		{"asprasad_treebeard/xgb_models--year_prediction_msd_xgb_model_save.json", MODEL_FORMAT_XGBOOST_JSON},
		{"asprasad_treebeard/xgb_models--bosch_xgb_model_save.json", MODEL_FORMAT_XGBOOST_JSON},
		{"siboehm_lleaves/tests--models--mtpl2--model.txt", MODEL_FORMAT_LIGHTGBM_TEXT},
		{"siboehm_lleaves/tests--models--NYC_taxi--model.txt", MODEL_FORMAT_LIGHTGBM_TEXT},
		{"dmlc_treelite/tests--examples--sparse_categorical--sparse_categorical_model.txt", MODEL_FORMAT_LIGHTGBM_TEXT},
		{"dmitryikh_leaves/testdata--lg_kddcup99.model", MODEL_FORMAT_LIGHTGBM_TEXT},
		{"asprasad_treebeard/onnx_models--abalone_onnx_model_save.onnx", MODEL_FORMAT_ONNX},
		{"asprasad_treebeard/onnx_models--higgs_xgb_model_save.onnx", MODEL_FORMAT_ONNX},
		{"asprasad_treebeard/onnx_models--year_prediction_msd_xgb_model_save.onnx", MODEL_FORMAT_ONNX},
	};

	printf("shared models\n");
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
	{
		char		path[512];
		size_t		len;
		char	   *text;
		const char *name = strrchr(models[i].path, '/') + 1;

		snprintf(path, sizeof(path), "../shared/models/%s", models[i].path);
		if ((text = ReadFile(path, &len)) == NULL)
		{
			printf("  skip %s: absent\n", models[i].path);
			continue;
		}
		if (models[i].format == MODEL_FORMAT_XGBOOST_JSON)
		{
			CheckCase(name, text, len, models[i].format, XGBOOST_READ_FLAT, EXPECT_PARSE);
			CheckCase(name, text, len, models[i].format, XGBOOST_READ_STREAM, EXPECT_PARSE);
			CheckCase(name, text, len, models[i].format, XGBOOST_READ_WHOLE, EXPECT_CLEAN);
		}
		else
			CheckCase(name, text, len, models[i].format, 0, EXPECT_PARSE);
		free(text);
	}
}

/* ---------- cancellation ---------- */

static atomic_bool cancel_flag;
static atomic_long cancel_countdown;	/* > 0: cancel on that call */
static double cancel_set_at;
static double last_poll;		/* when the check was last called */
static double longest_gap;		/* the longest time between two calls */

/* The registered check: the flag, or the countdown reaching zero */
static bool
TestCancelCheck(void)
{
	double		now = Now();

	if (now - last_poll > longest_gap)
		longest_gap = now - last_poll;
	last_poll = now;
	if (atomic_load(&cancel_countdown) > 0 && atomic_fetch_sub(&cancel_countdown, 1) == 1)
		atomic_store(&cancel_flag, true);
	return atomic_load(&cancel_flag);
}

/* Sleep for the given seconds, then set the flag */
static void *
CancelTimer(void *arg)
{
	double		delay = *(double *) arg;
	struct timespec ts = {(time_t) delay, (long) ((delay - floor(delay)) * 1e9)};

	nanosleep(&ts, NULL);
	cancel_set_at = Now();
	atomic_store(&cancel_flag, true);
	return NULL;
}

/* Heap bytes in use (malloc's arenas and its mmapped chunks) */
static size_t
HeapInUse(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Parse text with the cancel check registered, the reader in mode */
static Forest *
ParseCancelable(const Buf *b, ModelFormat format, XgboostReadMode mode, SilvanStatus *st)
{
	Forest	   *f;

	ParseXgboostReadMode(mode);
	CancelSetCheck(TestCancelCheck);
	f = ParseModel(b->p, b->len, format, NULL, st);
	CancelSetCheck(NULL);
	ParseXgboostReadMode(XGBOOST_READ_FLAT);
	return f;
}

/*
 * Cancel one parse at fractions of its length, by a timer: each must stop
 * in time.  Then cancel it at as many fractions of its polls, by a
 * countdown (no thread): each must leave the heap as it found it.
 */
static void
CheckCancelParse(const char *label, const Buf *b, ModelFormat format, XgboostReadMode mode)
{
	static const double fractions[] = {0.05, 0.25, 0.5, 0.75, 0.95};
	SilvanStatus st;
	double		t0 = Now();
	double		full;
	Forest	   *f;
	int			stopped = 0;
	long		polls;
	const char *mode_name = format == MODEL_FORMAT_XGBOOST_JSON ? mode_names[mode] : "";

	atomic_store(&cancel_flag, false);
	atomic_store(&cancel_countdown, LONG_MAX);
	longest_gap = 0;
	last_poll = t0;
	f = ParseCancelable(b, format, mode, &st);
	full = Now() - t0;
	if (Now() - last_poll > longest_gap)
		longest_gap = Now() - last_poll;
	polls = LONG_MAX - atomic_load(&cancel_countdown);
	atomic_store(&cancel_countdown, 0);
	CHECK_MSG(f != NULL, "%s: the uncancelled parse failed: %s: %s", label, st.message, st.detail);
	printf("  %-30s %-6s %.3f s, %ld polls, at most %.4f s apart\n", label,
		   format == MODEL_FORMAT_XGBOOST_JSON ? mode_names[mode] : "", full, polls, longest_gap);
	/* one realloc of a large array may take a while on a busy machine */
	if (scale == 1.0)
		CHECK_MSG(longest_gap < 2 * CANCEL_LATENCY, "%s: %.3f s without a poll", label,
				  longest_gap);
	ForestFree(f);
	f = NULL;
	for (size_t i = 0; i < sizeof(fractions) / sizeof(fractions[0]); i++)
	{
		double		delay = full * fractions[i];
		double		latency = 0;

		/* a stop that comes late is tried once more: the machine may be busy */
		for (int attempt = 0; attempt < 2 && (attempt == 0 || latency >= CANCEL_LATENCY); attempt++)
		{
			pthread_t	timer;

			ForestFree(f);
			atomic_store(&cancel_flag, false);
			cancel_set_at = 0;
			if (pthread_create(&timer, NULL, CancelTimer, &delay) != 0)
				abort();
			f = ParseCancelable(b, format, mode, &st);
			latency = Now() - cancel_set_at;
			pthread_join(timer, NULL);
		}
		if (f != NULL)
		{
			/* finished before the flag: the parse ran faster than the first time */
			ForestFree(f);
			f = NULL;
			continue;
		}
		stopped++;
		printf("  %-30s %-6s cancelled at %3.0f%%: stopped %.4f s after the flag (%s)\n",
			   label, mode_name, 100 * fractions[i], latency, st.detail);
		CHECK_MSG(st.kind == SILVAN_ERROR_CANCELED, "%s: at %.0f%%: kind %d: %s: %s", label,
				  100 * fractions[i], st.kind, st.message, st.detail);
		if (scale == 1.0)
			CHECK_MSG(latency < CANCEL_LATENCY, "%s: at %.0f%%: stopped %.3f s after the flag",
					  label, 100 * fractions[i], latency);
	}
	if (scale == 1.0)
		CHECK_MSG(stopped >= 3, "%s: only %d of the cancels landed", label, stopped);
	for (size_t i = 0; i < sizeof(fractions) / sizeof(fractions[0]); i++)
	{
		size_t		heap = HeapInUse();

		if (polls == 0)
			break;
		atomic_store(&cancel_flag, false);
		atomic_store(&cancel_countdown, 1 + (long) (fractions[i] * (double) polls));
		f = ParseCancelable(b, format, mode, &st);
		atomic_store(&cancel_countdown, 0);
		CHECK_MSG(f == NULL && st.kind == SILVAN_ERROR_CANCELED,
				  "%s (%s): not cancelled at poll %ld of %ld", label, mode_name,
				  1 + (long) (fractions[i] * (double) polls), polls);
		ForestFree(f);
		CHECK_MSG(HeapInUse() == heap, "%s (%s): cancelled at poll %ld of %ld: %lld heap bytes left behind",
				  label, mode_name, 1 + (long) (fractions[i] * (double) polls), polls,
				  (long long) (HeapInUse() - heap));
	}
}

/* The binary form's writer and reader stop on a check that fires on its second call */
static void
CheckCancelBinaryForm(const Buf *b)
{
	SilvanStatus st;
	Forest	   *f = ParseModel(b->p, b->len, MODEL_FORMAT_LIGHTGBM_TEXT, NULL, &st);
	uint8_t    *data = NULL;
	size_t		size = 0;

	CHECK_MSG(f != NULL, "binary form: %s: %s", st.message, st.detail);
	if (f == NULL || f->num_nodes < 2 * CANCEL_POLL_INTERVAL)
	{
		ForestFree(f);
		return;
	}
	CHECK(ForestSerialize(f, &data, &size, &st));
	CancelSetCheck(TestCancelCheck);
	atomic_store(&cancel_flag, false);
	atomic_store(&cancel_countdown, 2);
	{
		uint8_t    *again = NULL;
		size_t		again_size = 0;
		bool		ok = ForestSerialize(f, &again, &again_size, &st);

		CHECK_MSG(!ok && st.kind == SILVAN_ERROR_CANCELED, "ForestSerialize was not cancelled");
		if (ok)
			free(again);
	}
	atomic_store(&cancel_flag, false);
	atomic_store(&cancel_countdown, 2);
	{
		Forest	   *g = ForestDeserialize(data, size, &st);

		CHECK_MSG(g == NULL && st.kind == SILVAN_ERROR_CANCELED, "ForestDeserialize was not cancelled");
		ForestFree(g);
	}
	atomic_store(&cancel_countdown, 0);
	CancelSetCheck(NULL);
	free(data);
	ForestFree(f);
}

/* Cancel large benign models of each format */
static void
CheckCancel(void)
{
	Buf			b = {0};

	printf("cancellation\n");
	XgbBenign(&b, (int64_t) (250 * scale) + 1, 10);
	CheckCancelParse("XGBoost, 10-deep trees", &b, MODEL_FORMAT_XGBOOST_JSON, XGBOOST_READ_FLAT);
	CheckCancelParse("XGBoost, 10-deep trees", &b, MODEL_FORMAT_XGBOOST_JSON, XGBOOST_READ_STREAM);
	b.len = 0;
	XgbBenign(&b, 1, (int) (18 + log2(scale > 0.01 ? scale : 0.01)));
	CheckCancelParse("XGBoost, one 18-deep tree", &b, MODEL_FORMAT_XGBOOST_JSON, XGBOOST_READ_FLAT);
	b.len = 0;
	LgbBenign(&b, (int64_t) (2000 * scale) + 1, 256);
	CheckCancelParse("LightGBM, 256-leaf trees", &b, MODEL_FORMAT_LIGHTGBM_TEXT, 0);
	CheckCancelBinaryForm(&b);
	b.len = 0;
	LgbHeader(&b, 28, 1, NULL);
	{
		uint64_t	state = 1;

		LgbTree(&b, 0, (int64_t) 1 << (int) (19 + log2(scale > 0.01 ? scale : 0.01)), &state);
	}
	PutS(&b, "end of trees\n");
	CheckCancelParse("LightGBM, one 512k-leaf tree", &b, MODEL_FORMAT_LIGHTGBM_TEXT, 0);
	b.len = 0;
	OnnxBenign(&b, (int64_t) (2000 * scale) + 1, 9);
	CheckCancelParse("ONNX, 9-deep trees", &b, MODEL_FORMAT_ONNX, 0);
	free(b.p);
}

/* Is part named on the command line (or is nothing named)? */
static bool
Wanted(int argc, char **argv, const char *part)
{
	bool		any = false;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], part) == 0)
			return true;
		any |= atof(argv[i]) == 0;
	}
	return !any;
}

int
main(int argc, char **argv)
{
	/*
	 * Freed chunks in malloc's per-thread cache count as in use
	 * (mallinfo2), so the heap checks run without it: start again with
	 * it off
	 */
	if (getenv("SILVAN_TEST_TCACHE_OFF") == NULL)
	{
		setenv("SILVAN_TEST_TCACHE_OFF", "1", 1);
		setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
		execv("/proc/self/exe", argv);
	}
	for (int i = 1; i < argc; i++)
		if (atof(argv[i]) > 0)
			scale = atof(argv[i]);
	if (Wanted(argc, argv, "shared"))
		CheckSharedModels();
	if (Wanted(argc, argv, "onnx"))
		CheckOnnx();
	if (Wanted(argc, argv, "lightgbm"))
		CheckLightgbm();
	if (Wanted(argc, argv, "xgboost"))
		CheckXgboost();
	if (Wanted(argc, argv, "cancel"))
		CheckCancel();
	UNIT_DONE();
}
