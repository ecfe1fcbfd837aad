-- GPU targets from SQL on a machine without a GPU: cuda schedules are
-- stored and explained (PTX for sm_80), asking to run on cuda says what is
-- missing, auto falls back to the cpu quietly, and under
-- silvan.gpu_emulation (superusers) the very kernels a GPU would run score
-- on an emulated grid, equal to XGBoost's own outputs
\set fx binary_logistic
\i sql/fixture.psql

-- a cuda schedule: blocks of 32 rows, one thread per row
SELECT silvan.set_schedule('binary_logistic',
       E'tile(batch, b0, b1, 32)\ngpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)',
       target => 'cuda');
SELECT model, target, batch_size FROM silvan.schedules WHERE model = 'binary_logistic';
-- explain shows the kernel's schedule, MIR and PTX (sm_80 without a device)
SELECT line FROM regexp_split_to_table(silvan.explain('binary_logistic', 1024, 'cuda'), E'\n') AS line
 WHERE line ~ '^(schedule source|target|schedule:|mir|  for b)';
SELECT e ~ '\.entry silvan_forest_kernel' AS has_kernel, e ~ '\.target sm_80' AS sm_80,
       e ~ 'llvm\.nvvm\.read\.ptx\.sreg\.ctaid\.x' AS reads_block_index
  FROM silvan.explain('binary_logistic', 1024, 'cuda', llvm_ir => true) AS e;
-- a schedule a gpu cannot run as written, and a target that does not exist
SELECT silvan.set_schedule('binary_logistic',
       E'split(batch, b0, b1, 100)\ngpuDimension(b0, block.x)', target => 'cuda');
SELECT silvan.set_schedule('binary_logistic', 'representation(array)', target => 'tpu');
-- AMD: an HSA code object for gfx90a, linked by ld.lld (the gpu default schedule)
SELECT line FROM regexp_split_to_table(silvan.explain('binary_logistic', 1024, 'rocm'), E'\n') AS line
 WHERE line ~ '^(schedule source|target|schedule:)';
SELECT e ~ 'define amdgpu_kernel void @silvan_forest_kernel' AS amdgpu_kernel,
       e ~ 'llvm\.amdgcn\.workitem\.id\.x' AS reads_thread_index,
       e ~ 'amdgpu assembly:\n(.|\n)*\.amdgcn_target "amdgcn-amd-amdhsa--gfx90a' AS assembly,
       e ~ '\ts_endpgm' AS ends_program,
       e ~ 'code object: [0-9]+ bytes for gfx90a \(HSA, linked by ld\.lld\)' AS code_object
  FROM silvan.explain('binary_logistic', 1024, 'rocm', llvm_ir => true) AS e;

-- running on a GPU without a driver: a clean error naming what is missing
\set VERBOSITY terse
SET silvan.target = cuda;
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'fx_in', 'id');
SET silvan.target = rocm;
SELECT count(*) FROM silvan.predict_table('binary_logistic', 'fx_in', 'id');
\set VERBOSITY default
-- auto: no GPU here, so the cpu, quietly
SET silvan.target = auto;
SET silvan.gpu_min_batch = 1;
SELECT count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id') AS t
  JOIN fx_exp AS x ON x.id = t.key;

-- the emulated grid: the stored cuda schedule, then the gpu default
SET silvan.gpu_emulation = on;
SET silvan.target = cuda;
SELECT b, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM generate_series(1, 3) AS b,
       silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => b * 45 - 44) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
SELECT line FROM regexp_split_to_table(silvan.explain('binary_logistic', 1024, 'cuda'), E'\n') AS line
 WHERE line ~ '^target';
-- rows staged in shared memory: every thread copies a share, a barrier, then the walks
SELECT silvan.set_schedule('binary_logistic',
       E'tile(batch, b0, b1, 16)\ngpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)\ncache(b0)',
       target => 'cuda');
SELECT line FROM regexp_split_to_table(silvan.explain('binary_logistic', 1024, 'cuda'), E'\n') AS line
 WHERE line ~ 'cacheRows';
SELECT b, count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM generate_series(1, 2) AS b,
       silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => b * 13) AS t
  JOIN fx_exp AS x ON x.id = t.key
 GROUP BY b ORDER BY b;
SELECT silvan.set_schedule('binary_logistic', NULL, target => 'cuda');
-- rocm's batches run on the same emulated grid
SET silvan.target = rocm;
SELECT count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('binary_logistic', 'fx_in', 'id', batch_size => 7) AS t
  JOIN fx_exp AS x ON x.id = t.key;
SET silvan.target = cuda;
SELECT count(*) AS rows, count(*) FILTER (WHERE silvan.predict('binary_logistic', i.f)::real
                                            <> x.e[1]::real) AS scalar_diff
  FROM fx_in AS i JOIN fx_exp AS x USING (id);

-- deep trees, categorical splits, and classes, against XGBoost's outputs
\set fx deep_tree
\i sql/fixture.psql
SELECT count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('deep_tree', 'fx_in', 'id') AS t JOIN fx_exp AS x ON x.id = t.key;
\set fx categorical
\i sql/fixture.psql
SELECT count(*) AS rows, count(*) FILTER (WHERE t.prediction::real <> x.e[1]::real) AS diff
  FROM silvan.predict_table('categorical', 'fx_in', 'id') AS t JOIN fx_exp AS x ON x.id = t.key;
\set fx multi_softprob
\i sql/fixture.psql
-- tree threads add atomically (any order on a GPU; in order on the emulated grid)
SELECT silvan.set_schedule('multi_softprob',
       E'tile(batch, b0, b1, 16)\ntile(tree, t0, t1, 4)\nreorder(b0, b1, t0, t1)\n'
       'gpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)\ngpuDimension(t0, block.y)',
       target => 'cuda');
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q.margins::real[] <> x.e[2:1 + :g]::real[]) AS raw_diff
  FROM silvan.predict_raw_query('multi_softprob', 'SELECT id, f FROM fx_in')
       AS q(key bigint, margins float8[])
  JOIN fx_exp AS x ON x.id = q.key;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE t.probabilities::real[] <> x.e[2 + :g:1 + :g + :np]::real[]) AS proba_diff
  FROM silvan.predict_proba_table('multi_softprob', 'fx_in', 'id') AS t
  JOIN fx_exp AS x ON x.id = t.key;
-- sharedReduce: each tree thread sums its trees, the partials meet in shared
-- memory after a barrier (sums in another order: within rounding)
SELECT silvan.set_schedule('multi_softprob',
       E'tile(batch, b0, b1, 16)\ntile(tree, t0, t1, 4)\nreorder(b0, b1, t0, t1)\n'
       'gpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)\ngpuDimension(t0, block.y)\n'
       'sharedReduce(t0)\ncache(b0)', target => 'cuda');
SELECT line ~ 'partial sums to shared memory' AS shared_reduction
  FROM regexp_split_to_table(silvan.explain('multi_softprob', 1024, 'cuda'), E'\n') AS line
 WHERE line ~ 'for t0';
SELECT count(*) AS rows,
       count(*) FILTER (WHERE abs(q.margins[1] - x.e[2]) > 1e-5 * greatest(1, abs(x.e[2]))) AS beyond_rounding
  FROM silvan.predict_raw_query('multi_softprob', 'SELECT id, f FROM fx_in')
       AS q(key bigint, margins float8[])
  JOIN fx_exp AS x ON x.id = q.key;

-- tune for cuda on the emulated grid: the default and Algorithm 1's exact
-- points (one tree thread a row: 2 block sizes x 3 interleaves x 3
-- representations), timed (meaninglessly, here) and checked bit for bit,
-- the winner stored for cuda with the device it ran on
SET silvan.tune_min_speedup = 0;
SELECT batch_size, stored, candidates, rows_from
  FROM silvan.tune('multi_softprob', batch_sizes => '{4096}', target => 'cuda',
                   budget => '1 minute');
RESET silvan.tune_min_speedup;
SELECT target, batch_size, origin, schedule ~ 'gpuDimension\(b0, grid\.x\)' AS mapped,
       provenance->>'target' AS tuned_for, provenance->>'device' AS device,
       provenance->>'arch' AS arch
  FROM silvan.schedules WHERE model = 'multi_softprob' AND target = 'cuda'
 ORDER BY batch_size NULLS FIRST;
-- the tuned schedule scores batches of 4096 on cuda, equal to XGBoost's outputs
SELECT line FROM regexp_split_to_table(silvan.explain('multi_softprob', 4096, 'cuda'), E'\n') AS line
 WHERE line ~ '^schedule source';
SELECT count(*) AS rows,
       count(*) FILTER (WHERE q.margins::real[] <> x.e[2:1 + :g]::real[]) AS raw_diff
  FROM silvan.predict_raw_query('multi_softprob', 'SELECT id, f FROM fx_in', batch_size => 4096)
       AS q(key bigint, margins float8[])
  JOIN fx_exp AS x ON x.id = q.key;
-- exhaustive, inexact: Table 5 (tree threads, shared reductions), within rounding
SET silvan.tune_min_speedup = 0;
SELECT batch_size, stored, candidates > 10 AS several
  FROM silvan.tune('multi_softprob', batch_sizes => '{64}', target => 'cuda',
                   strategy => 'exhaustive', exact => false, budget => '3 seconds');
RESET silvan.tune_min_speedup;
SELECT batch_size, provenance->>'strategy' AS strategy, provenance->>'exact' AS exact
  FROM silvan.schedules WHERE model = 'multi_softprob' AND target = 'cuda' AND origin = 'tuned'
 ORDER BY batch_size;
-- without emulation a GPU target is tuned only on its device
\set VERBOSITY terse
RESET silvan.gpu_emulation;
SELECT * FROM silvan.tune('multi_softprob', batch_sizes => '{64}', target => 'rocm');
SET silvan.gpu_emulation = on;
\set VERBOSITY default
RESET silvan.target;
RESET silvan.gpu_emulation;
RESET silvan.gpu_min_batch;

-- only superusers may emulate a GPU
CREATE ROLE gpu_user;
SET ROLE gpu_user;
SET silvan.gpu_emulation = on;
-- tuning another role's model for a GPU: refused for the model before any driver is loaded
\set VERBOSITY terse
SELECT * FROM silvan.tune('multi_softprob', batch_sizes => '{64}', target => 'cuda');
\set VERBOSITY default
RESET ROLE;
DROP ROLE gpu_user;
