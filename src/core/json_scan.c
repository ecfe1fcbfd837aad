/*
 * json_scan.c
 *		A strict JSON scan that finds an XGBoost document's trees array.
 *
 * json-c builds a document whole before returning any of it, and a tree's
 * many small arrays cost it 30 to 100 heap bytes per byte of text: a 423
 * MB model of a million one-leaf trees took 6.7 GB to load.  So the
 * XGBoost reader first scans the text here, allocating nothing, to learn
 * where learner.gradient_booster.model.trees (for dart,
 * learner.gradient_booster.gbtree.model.trees) lies and how many trees it
 * holds.  json-c then parses the document with that array left out, and
 * each tree on its own as the reader reaches it.
 *
 * The scan accepts a subset of what json-c accepts: strict JSON (RFC 8259
 * numbers, strings without raw control bytes or lone surrogate escapes),
 * plus the NaN, Infinity and -Infinity that XGBoost writes, nested at
 * most SCAN_MAX_DEPTH deep (json-c allows 32).  It gives up on anything
 * else, and on a path it cannot be sure json-c reads the same way: a key
 * on the path written twice in one object (json-c keeps the last) or with
 * an escape, or trees under both model and gbtree.model.  Then the reader
 * parses the whole document as it always did, so a text it refused before
 * is refused with the same error, and a text the scan accepts parses
 * without error piece by piece as it would have whole.
 *
 * Even one tree costs json-c some sixty allocations, so a tree of the
 * usual shape is not given to json-c at all: JsonReadFlat reads it as a
 * flat object, a table of its members and of the text of every scalar,
 * which the reader converts itself, as json-c would (see xgboost_json.c).
 * Anything else in a tree (nesting, null, escapes, a number of more than
 * 18 digits, which json-c clamps) makes it give up, and json-c reads that
 * tree.
 *
 * While it scans, the scan counts the objects, arrays and separators
 * outside the trees array, which bound what json-c will hold for the
 * document without it (JSON_COST); the reader charges that to its budget
 * before json-c starts.  It polls for cancellation every
 * CANCEL_POLL_INTERVAL values, and JsonReadFlat every as many scalars;
 * JsonReadFlat's arrays are charged to the budget as they grow.
 */
#include <stdlib.h>
#include <string.h>

#include "silvan/cancel.h"
#include "silvan/json_scan.h"

/* Deepest nesting we scan; XGBoost documents reach about 7 */
#define SCAN_MAX_DEPTH	20

/* Which object on the way to the trees a value is, if any */
typedef enum ScanPath
{
	PATH_NONE = 0,
	PATH_ROOT,
	PATH_LEARNER,
	PATH_BOOSTER,
	PATH_GBTREE,
	PATH_MODEL,
	PATH_DART_MODEL,
	PATH_TREES,
	PATH_DART_TREES
} ScanPath;

/* The keys on the way to the trees: in which object, and where each leads */
static const struct
{
	ScanPath	in;
	const char *key;
	ScanPath	to;
}			scan_steps[] = {
	{PATH_ROOT, "learner", PATH_LEARNER},
	{PATH_LEARNER, "gradient_booster", PATH_BOOSTER},
	{PATH_BOOSTER, "model", PATH_MODEL},
	{PATH_BOOSTER, "gbtree", PATH_GBTREE},
	{PATH_GBTREE, "model", PATH_DART_MODEL},
	{PATH_MODEL, "trees", PATH_TREES},
	{PATH_DART_MODEL, "trees", PATH_DART_TREES},
};

#define SCAN_STEPS	(sizeof(scan_steps) / sizeof(scan_steps[0]))

/* What json-c will build: counted outside the trees array [0] and inside it [1] */
typedef struct ScanCounts
{
	int64_t		objects;
	int64_t		arrays;
	int64_t		separators;
} ScanCounts;

typedef struct Scan
{
	const char *text;
	size_t		len;
	size_t		pos;
	int			depth;
	bool		ambiguous;		/* the path is not certain */
	bool		found;
	JsonTreesSpan *span;
	bool		poll;			/* poll for cancellation */
	bool		canceled;
	uint32_t	ticks;
	int			in_trees;		/* 1 inside the trees array, else 0 */
	ScanCounts	counts[2];
} Scan;

static bool ScanValue(Scan *s, ScanPath path);

/* Is c a blank, as json-c counts them? */
static inline bool
IsBlank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Skip blanks */
static void
SkipBlanks(Scan *s)
{
	while (s->pos < s->len && IsBlank(s->text[s->pos]))
		s->pos++;
}

/* Take the byte c if it comes next */
static bool
Take(Scan *s, char c)
{
	if (s->pos >= s->len || s->text[s->pos] != c)
		return false;
	s->pos++;
	return true;
}

/* Take a word (true, NaN, ...) if it comes next */
static inline bool
TakeWord(Scan *s, const char *word)
{
	size_t		n = strlen(word);

	if (s->len - s->pos < n || memcmp(s->text + s->pos, word, n) != 0)
		return false;
	s->pos += n;
	return true;
}

/* The next byte, or NUL at the end */
static inline char
Peek(const Scan *s)
{
	return s->pos < s->len ? s->text[s->pos] : '\0';
}

/* Take a run of at least one digit */
static bool
TakeDigits(Scan *s)
{
	size_t		start = s->pos;

	while (s->pos < s->len && s->text[s->pos] >= '0' && s->text[s->pos] <= '9')
		s->pos++;
	return s->pos > start;
}

/* Scan a number: strict JSON, or NaN, Infinity, -Infinity */
static bool
ScanNumber(Scan *s)
{
	bool		minus = Take(s, '-');

	if (Peek(s) == 'I')
		return TakeWord(s, "Infinity");
	if (Peek(s) == 'N')
		return !minus && TakeWord(s, "NaN");
	if (!Take(s, '0') && !TakeDigits(s))
		return false;
	if (Take(s, '.') && !TakeDigits(s))
		return false;
	if (Take(s, 'e') || Take(s, 'E'))
	{
		if (!Take(s, '+'))
			Take(s, '-');
		if (!TakeDigits(s))
			return false;
	}
	return true;
}

/* Scan an escape after its backslash; no lone surrogates */
static bool
ScanEscape(Scan *s)
{
	unsigned	code = 0;
	char		c;

	if (s->pos >= s->len)
		return false;
	c = s->text[s->pos++];
	if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' ||
		c == 'n' || c == 'r' || c == 't')
		return true;
	if (c != 'u' || s->len - s->pos < 4)
		return false;
	for (int i = 0; i < 4; i++)
	{
		c = s->text[s->pos++];
		if (c >= '0' && c <= '9')
			code = code * 16 + (c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			code = code * 16 + ((c | 0x20) - 'a' + 10);
		else
			return false;
	}
	return code < 0xD800 || code > 0xDFFF;
}

/* Scan a string; [*start, *end) is its raw content */
static bool
ScanString(Scan *s, size_t *start, size_t *end, bool *escaped)
{
	if (!Take(s, '"'))
		return false;
	*start = s->pos;
	*escaped = false;
	while (s->pos < s->len)
	{
		unsigned char c = (unsigned char) s->text[s->pos++];

		if (c == '"')
		{
			*end = s->pos - 1;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\')
		{
			*escaped = true;
			if (!ScanEscape(s))
				return false;
		}
	}
	return false;
}

/* Scan an array; the trees array records where it is and its length */
static bool
ScanArray(Scan *s, ScanPath path)
{
	size_t		start = s->pos;
	int64_t		count = 0;

	bool		trees = path == PATH_TREES || path == PATH_DART_TREES;
	int			outer = s->in_trees;

	if (!Take(s, '['))
		return false;
	s->counts[outer].arrays++;
	s->in_trees = trees ? 1 : outer;
	SkipBlanks(s);
	if (!Take(s, ']'))
	{
		do
		{
			if (count > 0)
				s->counts[s->in_trees].separators++;
			if (!ScanValue(s, PATH_NONE))
				return false;
			count++;
			SkipBlanks(s);
		} while (Take(s, ','));
		if (!Take(s, ']'))
			return false;
	}
	s->in_trees = outer;
	if (trees)
	{
		s->ambiguous |= s->found;
		s->found = true;
		s->span->start = start;
		s->span->end = s->pos;
		s->span->count = count;
		s->span->under_gbtree = path == PATH_DART_TREES;
	}
	return true;
}

/* Where a key of an object on the path leads; marks keys seen twice */
static ScanPath
Step(Scan *s, ScanPath path, size_t key, size_t key_end, bool escaped,
	 unsigned *seen)
{
	ScanPath	to = PATH_NONE;

	if (path == PATH_NONE)
		return PATH_NONE;
	s->ambiguous |= escaped;
	for (size_t i = 0; i < SCAN_STEPS; i++)
		if (scan_steps[i].in == path &&
			strlen(scan_steps[i].key) == key_end - key &&
			memcmp(s->text + key, scan_steps[i].key, key_end - key) == 0)
		{
			s->ambiguous |= (*seen >> i) & 1;
			*seen |= 1u << i;
			to = scan_steps[i].to;
		}
	return to;
}

/* Scan an object, following the keys that lead to the trees */
static bool
ScanObject(Scan *s, ScanPath path)
{
	unsigned	seen = 0;

	if (!Take(s, '{'))
		return false;
	s->counts[s->in_trees].objects++;
	SkipBlanks(s);
	if (Take(s, '}'))
		return true;
	do
	{
		size_t		key,
					key_end;
		bool		escaped;
		ScanPath	child;

		s->counts[s->in_trees].separators += 2;	/* the ':' and a ',' */
		SkipBlanks(s);
		if (!ScanString(s, &key, &key_end, &escaped))
			return false;
		child = Step(s, path, key, key_end, escaped, &seen);
		SkipBlanks(s);
		if (!Take(s, ':') || !ScanValue(s, child))
			return false;
		SkipBlanks(s);
	} while (Take(s, ','));
	return Take(s, '}');
}

/* Scan one value after optional blanks */
static bool
ScanValue(Scan *s, ScanPath path)
{
	size_t		start,
				end;
	bool		escaped;
	bool		ok;
	char		c;

	SkipBlanks(s);
	if (s->pos >= s->len)
		return false;
	if (s->poll && CancelTick(&s->ticks))
	{
		s->canceled = true;
		s->pos = s->len;
		return false;
	}
	c = s->text[s->pos];
	if (c == '{' || c == '[')
	{
		if (s->depth >= SCAN_MAX_DEPTH)
			return false;
		s->depth++;
		ok = c == '{' ? ScanObject(s, path) : ScanArray(s, path);
		s->depth--;
		return ok;
	}
	if (c == '"')
		return ScanString(s, &start, &end, &escaped);
	if (c == 't' || c == 'f' || c == 'n')
		return TakeWord(s, c == 't' ? "true" : c == 'f' ? "false" : "null");
	return ScanNumber(s);
}

/* What json-c holds for text of the given bytes and counts */
static int64_t
ScanCost(size_t bytes, const ScanCounts *c)
{
	return JSON_COST(bytes, c->objects, c->arrays, c->separators);
}

/* Scan a whole document; true when it is valid and its trees found for sure */
bool
JsonScanTrees(const char *text, size_t len, JsonTreesSpan *span)
{
	Scan		s = {text, len, 0, 0, false, false, span};

	memset(span, 0, sizeof(*span));
	s.poll = true;
	if (!ScanValue(&s, PATH_ROOT))
	{
		span->canceled = s.canceled;
		return false;
	}
	SkipBlanks(&s);
	if (s.pos != len || !s.found || s.ambiguous)
		return false;
	span->skeleton_cost = ScanCost(len - (span->end - span->start) + 2, &s.counts[0]);
	return true;
}

/* Offset just past the value at pos of a scanned text; *cost what json-c holds for it */
size_t
JsonScanValueEnd(const char *text, size_t len, size_t pos, int64_t *cost)
{
	JsonTreesSpan unused;
	Scan		s = {text, len, pos, 0, false, false, &unused};

	ScanValue(&s, PATH_NONE);
	if (cost != NULL)
		*cost = ScanCost(s.pos - pos, &s.counts[0]);
	return s.pos;
}

/* What json-c holds, at most, for any text; -1 when a cancel request stopped the count */
int64_t
JsonTextCost(const char *text, size_t len)
{
	ScanCounts	c = {0};

	for (size_t done = 0; done < len;)
	{
		size_t		end = len - done > ((size_t) 1 << 20) ? done + ((size_t) 1 << 20) : len;

		for (; done < end; done++)
		{
			char		ch = text[done];

			c.objects += ch == '{';
			c.arrays += ch == '[';
			c.separators += ch == ',' || ch == ':';
		}
		if (CancelRequested())
			return -1;
	}
	return ScanCost(len, &c);
}

/* Offset of the first non-blank byte at or after pos */
size_t
JsonScanSkipBlanks(const char *text, size_t len, size_t pos)
{
	while (pos < len && IsBlank(text[pos]))
		pos++;
	return pos;
}

/*
 * Make room for one more entry of size bytes in a growing array of a flat
 * object, charging the growth to its budget; polls for cancellation
 */
static bool
FlatReserve(JsonFlat *f, void **array, int64_t *capacity, int64_t used, size_t size)
{
	int64_t		cap = *capacity < 64 ? 64 : *capacity * 2;
	int64_t		grow = (cap - *capacity) * (int64_t) size;
	int64_t		held = *capacity * (int64_t) size;
	void	   *grown;

	if (CancelTick(&f->ticks))
	{
		f->canceled = true;
		return false;
	}
	if (used < *capacity)
		return true;
	/* realloc may hold the old array and the new one at once: both are charged meanwhile */
	if (f->budget != NULL && !DecodeTake(f->budget, grow + held, "the arrays of a tree"))
	{
		f->over_budget = true;
		return false;
	}
	if ((grown = realloc(*array, (size_t) cap * size)) == NULL)
	{
		if (f->budget != NULL)
			DecodeRelease(f->budget, grow + held);
		return false;
	}
	if (f->budget != NULL)
		DecodeRelease(f->budget, held);
	*array = grown;
	*capacity = cap;
	return true;
}

/* How many digits a number token has if it is an integer; 0 if it is not */
static size_t
IntegerDigits(const char *p, size_t n)
{
	size_t		digits = n - (n > 0 && p[0] == '-');

	for (size_t i = n - digits; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return digits;
}

/* Read the scalar at s->pos and append it; false if it is not a short scalar */
static bool
ReadScalar(Scan *s, JsonFlat *f, size_t base)
{
	size_t		start = s->pos;
	size_t		a,
				b;
	bool		escaped;
	JsonScalar	sc;

	if (s->pos < s->len && s->text[s->pos] == '"')
	{
		if (!ScanString(s, &a, &b, &escaped) || escaped)
			return false;
		sc.kind = JSON_FLAT_STRING;
	}
	else
	{
		if ((Peek(s) == 't' && TakeWord(s, "true")) ||
			(Peek(s) == 'f' && TakeWord(s, "false")))
			sc.kind = JSON_FLAT_BOOL;
		else if (ScanNumber(s))
		{
			/* json-c clamps longer integers: leave them to it */
			size_t		digits = IntegerDigits(s->text + start, s->pos - start);

			if (digits > 18)
				return false;
			sc.kind = digits > 0 ? JSON_FLAT_INT : JSON_FLAT_DOUBLE;
		}
		else
			return false;
		a = start;
		b = s->pos;
	}
	if (b - a > JSON_FLAT_MAX_TOKEN ||
		!FlatReserve(f, (void **) &f->scalars, &f->scalar_capacity, f->num_scalars,
					 sizeof(JsonScalar)))
		return false;
	sc.offset = (uint32_t) (a - base);
	sc.len = (uint8_t) (b - a);
	f->scalars[f->num_scalars++] = sc;
	return true;
}

/* Read an array of scalars into member m */
static bool
ReadFlatArray(Scan *s, JsonFlat *f, size_t base, JsonMember *m)
{
	m->kind = JSON_FLAT_ARRAY;
	m->first = f->num_scalars;
	if (!Take(s, '['))
		return false;
	SkipBlanks(s);
	if (Take(s, ']'))
		return true;
	do
	{
		SkipBlanks(s);
		if (!ReadScalar(s, f, base))
			return false;
		m->count++;
		SkipBlanks(s);
	} while (Take(s, ','));
	return Take(s, ']');
}

static bool ReadFlatMembers(Scan *s, JsonFlat *f, size_t base, int32_t parent);

/* Read one member's value: a scalar, an array, or (at the top) an object */
static bool
ReadFlatValue(Scan *s, JsonFlat *f, size_t base, int64_t index)
{
	JsonMember	m = f->members[index];
	char		c = s->pos < s->len ? s->text[s->pos] : '\0';
	bool		ok;

	if (c == '[' && m.parent < 0)
		ok = ReadFlatArray(s, f, base, &m);
	else if (c == '{' && m.parent < 0)
	{
		m.kind = JSON_FLAT_OBJECT;
		f->members[index] = m;
		return ReadFlatMembers(s, f, base, (int32_t) index);
	}
	else
	{
		m.first = f->num_scalars;
		ok = ReadScalar(s, f, base);
		if (ok)
			m.kind = f->scalars[m.first].kind;
	}
	f->members[index] = m;
	return ok;
}

/* Read an object's members, appending them with the given parent */
static bool
ReadFlatMembers(Scan *s, JsonFlat *f, size_t base, int32_t parent)
{
	if (!Take(s, '{'))
		return false;
	SkipBlanks(s);
	if (Take(s, '}'))
		return true;
	do
	{
		size_t		key,
					key_end;
		bool		escaped;
		int64_t		index = f->num_members;

		SkipBlanks(s);
		if (!ScanString(s, &key, &key_end, &escaped) || escaped ||
			!FlatReserve(f, (void **) &f->members, &f->member_capacity, f->num_members,
						 sizeof(JsonMember)))
			return false;
		memset(&f->members[index], 0, sizeof(JsonMember));
		f->members[index].key = (uint32_t) (key - base);
		f->members[index].key_len = (uint32_t) (key_end - key);
		f->members[index].parent = parent;
		f->num_members++;
		SkipBlanks(s);
		if (!Take(s, ':'))
			return false;
		SkipBlanks(s);
		if (!ReadFlatValue(s, f, base, index))
			return false;
		SkipBlanks(s);
	} while (Take(s, ','));
	return Take(s, '}');
}

/* Read the object at pos as a flat object */
bool
JsonReadFlat(const char *text, size_t len, size_t pos, JsonFlat *flat, size_t *end)
{
	Scan		s = {text, len, JsonScanSkipBlanks(text, len, pos), 0, false, false, NULL};
	size_t		base = s.pos;

	flat->base = text + base;
	flat->num_members = 0;
	flat->num_scalars = 0;
	flat->over_budget = false;
	flat->canceled = false;
	if (!ReadFlatMembers(&s, flat, base, -1) || s.pos - base > UINT32_MAX)
		return false;
	*end = s.pos;
	return true;
}

/* The last member called key in object parent (-1: the top); -1 if none */
int64_t
JsonFlatFind(const JsonFlat *flat, int64_t parent, const char *key)
{
	size_t		n = strlen(key);

	for (int64_t i = flat->num_members - 1; i >= 0; i--)
	{
		const JsonMember *m = &flat->members[i];

		if (m->parent == parent && m->key_len == n &&
			memcmp(flat->base + m->key, key, n) == 0)
			return i;
	}
	return -1;
}

/* Free a flat object's arrays */
void
JsonFlatFree(JsonFlat *flat)
{
	if (flat->budget != NULL)
		DecodeRelease(flat->budget, flat->member_capacity * (int64_t) sizeof(JsonMember) +
					  flat->scalar_capacity * (int64_t) sizeof(JsonScalar));
	free(flat->members);
	free(flat->scalars);
	memset(flat, 0, sizeof(*flat));
}
