-- Schedules: stored per model and batch size, validated, chosen by batch
-- size, explained; every variant gives XGBoost's own predictions.
\set fx binary_logistic
\i sql/fixture.psql

-- serial schedules keep XGBoost's summation order: float32-exact
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', batch_size => 64);
SELECT silvan.set_schedule('binary_logistic',
       'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1)', batch_size => 7);
SELECT silvan.set_schedule('binary_logistic',
       E'tile(batch, b0, b1, 4)\ntile(tree, t0, t1, 2)\nreorder(b0, t0, b1, t1)', batch_size => 13);
SELECT silvan.set_schedule('binary_logistic',
       'tile(batch, b0, b1, 32); reorder(b0, tree, b1); parallel(b0); representation(sparse)',
       batch_size => 33);
SELECT b, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM unnest('{64, 7, 13, 33, 1000}'::int[]) AS b,
       silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => b) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
SELECT coalesce(batch_size, 0) AS batch_size, schedule FROM silvan.schedule ORDER BY 1;

-- a tree-parallel schedule sums trees in another order: equal within float rounding
SELECT silvan.set_schedule('binary_logistic',
       'tile(tree, t0, t1, 3); reorder(t0, batch, t1); parallel(t0)', batch_size => 99);
SET silvan.max_threads = 2;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE abs(t.prediction - x.e[1]) > 1e-6) AS diff
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 99) AS t
  JOIN fx_exp AS x ON x.id = t.key;
RESET silvan.max_threads;

-- which schedule a batch size gets
SELECT regexp_replace(split_part(silvan.explain('binary_logistic', 64), E'\n', 1), '\d+ ms', 'N ms') AS b64,
       split_part(silvan.explain('binary_logistic', 70), E'\n', 1) AS b70,
       split_part(silvan.explain('binary_logistic', 100000), E'\n', 1) AS b100000;
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)');
SELECT split_part(silvan.explain('binary_logistic', 100000), E'\n', 1) AS all_sizes;
-- the same text stored for two sizes: each size names its own row
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', batch_size => 16);
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', batch_size => 1000);
SELECT b, split_part(silvan.explain('binary_logistic', b), E'\n', 1) AS source
  FROM unnest('{16,1000,20,100000}'::int[]) AS b;
SELECT silvan.set_schedule('binary_logistic', NULL, batch_size => 16);
SELECT silvan.set_schedule('binary_logistic', NULL, batch_size => 1000);
SELECT silvan.set_schedule('binary_logistic', NULL);
SELECT silvan.set_schedule('binary_logistic', NULL, batch_size => 99);
SELECT count(*) AS stored FROM silvan.schedule;

-- explain shows every level (compile time masked, and whether the passes
-- ran or their image came from the code cache; the code's size, whose
-- figures depend on the CPU's features, masked too)
SELECT regexp_replace(regexp_replace(silvan.explain('binary_logistic', 7),
	'compile time: [0-9.]+ ms \([a-z ]+\)(\npasses: [^\n]*)?', 'compile time: N ms'),
	'code size: [^\n]*', 'code size: N llvm ir instructions, ... (against the compile''s limits)');

-- bad schedules are never stored
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 0)');
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 4); reorder(b0, nope)');
SELECT silvan.set_schedule('binary_logistic', E'tile(batch, b0, b1, 4)\nreorder(b0, tree)');
SELECT silvan.set_schedule('binary_logistic', 'interleave(batch)');
SELECT silvan.set_schedule('binary_logistic', 'unrollWalk(batch, 2)');
SELECT silvan.set_schedule('binary_logistic', 'tile(batch b0, b1, 4)');
SELECT silvan.set_schedule('binary_logistic', 'Tile(batch, b0, b1, 4)');
SELECT silvan.set_schedule('binary_logistic', 'representation(bitmap)');
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', target => 'tpu');
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch)', batch_size => 0);
SELECT silvan.set_schedule('no_such_model', 'reorder(tree, batch)');
SELECT count(*) AS stored FROM silvan.schedule;

-- profiles: node hit counts over real rows, for probability-based tiling
SELECT silvan.profile('binary_logistic', 'fx_in', 'id') AS rows_profiled;
SELECT num_rows, array_length(node_hits, 1) AS nodes, node_hits[1] AS root_hits
  FROM silvan.profile JOIN silvan.model ON model.id = profile.model_id
 WHERE name = 'binary_logistic';
SELECT silvan.profile('binary_logistic', 'SELECT id::text, f FROM fx_in WHERE id <= 10') AS rows_profiled;

-- Treebeard tiling: uniform, and probability-based with the stored profile
SELECT silvan.set_schedule('binary_logistic', 'tileTrees(4, probabilistic)', batch_size => 50);
SELECT silvan.set_schedule('binary_logistic', 'tileTrees(8, uniform); representation(sparse)', batch_size => 51);
SELECT silvan.set_schedule('binary_logistic', 'tileTrees(4, uniform); representation(reorg)', batch_size => 52);
SELECT silvan.set_schedule('binary_logistic', 'reorderTrees()', batch_size => 53);
-- the perfect layout: one implicit perfect tree, no links; untiled only
SELECT silvan.set_schedule('binary_logistic', 'tile(batch, b0, b1, 8); reorder(b0, tree, b1); interleave(b1); representation(perfect)', batch_size => 54);
SELECT silvan.set_schedule('binary_logistic', 'reorder(tree, batch); earlyExitWalk(batch); representation(perfect)', batch_size => 55);
SELECT silvan.set_schedule('binary_logistic', 'tileTrees(4, uniform); representation(perfect)', batch_size => 56);
SELECT b, count(*) AS rows,
       count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS exact_diff,
       count(*) FILTER (WHERE abs(t.prediction - x.e[1]) > 1e-6) AS diff
  FROM unnest('{50, 51, 52, 53, 54, 55}'::int[]) AS b,
       silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => b) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
-- probability-based tiling needs a profile
SELECT silvan.set_schedule('multi_softprob', 'tileTrees(4, probabilistic)');

-- query cancel stops a long scan, parallel batches included
SET silvan.max_threads = 2;
SET statement_timeout = '200ms';
SELECT count(*) FROM silvan.predict_query('binary_logistic',
       'SELECT g, 1::real, 2::real, 3::real, 4::real, 5::real, 6::real FROM generate_series(1, 100000000) g',
       200000) AS (k int, p float8);
RESET statement_timeout;
RESET silvan.max_threads;
SELECT silvan.predict('binary_logistic', '{1,2,3,4,5,6}'::real[]) > 0 AS still_serving;

-- the schedules view; removing nothing says so
SELECT model, target, batch_size, schedule, origin, provenance IS NULL AS no_provenance
  FROM silvan.schedules WHERE model = 'binary_logistic' ORDER BY batch_size;
SELECT silvan.set_schedule('binary_logistic', NULL, batch_size => 4242) AS removed_nothing;

-- a schedule that sums trees in another order, stored for batch 128 alone,
-- never reaches a scalar predict() (a single row) nor a batch of 1000: they
-- run the default, bit for bit as XGBoost; a batch of 100 (within a factor
-- of 2) uses it
\set bl `cat test/fixtures/binary_logistic.json`
SELECT silvan.load_model('bl_scalar', :'bl') > 0 AS loaded;
SELECT silvan.set_schedule('bl_scalar',
       'tile(tree, t0, t1, 3); reorder(t0, batch, t1); parallel(t0)', batch_size => 128);
SET silvan.max_threads = 2;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE silvan.predict('bl_scalar', f)::real <> x.e[1]::real) AS scalar_diff
  FROM fx_in JOIN fx_exp AS x USING (id);
SELECT split_part(silvan.explain('bl_scalar', 1), E'\n', 1) AS b1,
       split_part(silvan.explain('bl_scalar', 1000), E'\n', 1) AS b1000,
       split_part(silvan.explain('bl_scalar', 100), E'\n', 1) AS b100;
RESET silvan.max_threads;
SELECT silvan.set_schedule('bl_scalar', NULL, batch_size => 128) AS removed;
SELECT silvan.drop_model('bl_scalar');

-- silvan.vector_walk = off keeps default schedules in lock-step everywhere (on,
-- where the CPU has AVX-512 and gathers fast, they walk rows as vectors); the
-- predictions are XGBoost's either way
\set bl `cat test/fixtures/binary_logistic.json`
SELECT silvan.load_model('bl_default', :'bl') > 0 AS loaded;
SET silvan.vector_walk = off;
SELECT silvan.explain('bl_default', 1024) LIKE '%vectorWalk%' AS vectors_when_off;
CREATE TEMP TABLE lockstep AS
  SELECT * FROM silvan.predict_table('bl_default', 'fx_in', 'id', batch_size => 1024);
RESET silvan.vector_walk;
SELECT count(*) AS rows, count(*) FILTER (WHERE l.prediction <> v.prediction) AS differ,
       count(*) FILTER (WHERE v.prediction::real <> x.e[1]::real) AS diff
  FROM lockstep AS l
  JOIN silvan.predict_table('bl_default', 'fx_in', 'id', batch_size => 1024) AS v USING (key)
  JOIN fx_exp AS x ON x.id = v.key;
SELECT silvan.drop_model('bl_default');
