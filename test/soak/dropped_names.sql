-- A reproduction that make soak's memory check led to (run it with psql
-- from the repository root, in a database with silvan): a backend keeps
-- the forest and compiled code of every model name it has scored, also
-- after the model is dropped, so scoring many short-lived names grows it
-- without bound (about 100 kB per name for this 32-tree model).  The same
-- name loaded, scored and dropped as often stays flat.
\set QUIET on
\set m `cat test/fixtures/multi_softprob.json`
CREATE TEMP TABLE five AS
	SELECT g::bigint AS id, ARRAY[g % 7, g % 5, g % 3, g % 11, g % 13]::real[] AS f
	  FROM generate_series(1, 1000) AS g;
CREATE TEMP TABLE step AS SELECT i FROM generate_series(1, 300) AS i;
-- warm up: LLVM loaded, one model compiled and dropped
\o /dev/null
SELECT silvan.load_model('warm', :'m');
SELECT count(*) FROM silvan.predict_table('warm', 'five', 'id');
SELECT silvan.drop_model('warm');
\o
SELECT substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s*(\d+)')::int / 1024 AS rss_anon_mb_before;
-- 300 new names, each loaded, scored and dropped (a statement each)
\o /dev/null
SELECT format('SELECT silvan.load_model(%L, %L)', 'tmp_' || i, :'m'),
	   format('SELECT count(*) FROM silvan.predict_table(%L, ''five'', ''id'')', 'tmp_' || i),
	   format('SELECT silvan.drop_model(%L)', 'tmp_' || i)
  FROM step \gexec
\o
SELECT substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s*(\d+)')::int / 1024 AS rss_anon_mb_after_300_names;
-- one name, loaded, scored and dropped 300 times
\o /dev/null
SELECT format('SELECT silvan.load_model(%L, %L)', 'tmp', :'m'),
	   format('SELECT count(*) FROM silvan.predict_table(%L, ''five'', ''id'')', 'tmp'),
	   format('SELECT silvan.drop_model(%L)', 'tmp')
  FROM step \gexec
\o
SELECT substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s*(\d+)')::int / 1024 AS rss_anon_mb_after_one_name_300_times;
