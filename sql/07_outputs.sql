-- Every output (predict, proba, raw) of every kind of model (regression,
-- binary, multi-class, ranking) through every path (scalar float4 and
-- float8, table, query), over many rows in one backend, against XGBoost's
-- own outputs; compiled at several batch sizes, pipelined, and interpreted.
\set QUIET on
\set batch 4096
\set many 'DROP TABLE IF EXISTS fx_many; CREATE TABLE fx_many AS SELECT c * 1000 + id AS k, id, f FROM fx_in, generate_series(1, 20) AS c;'
\set fx reg_squarederror
\i sql/fixture.psql
CREATE TABLE fx_many AS SELECT c * 1000 + id AS k, id, f FROM fx_in, generate_series(1, 20) AS c;
\i sql/outputs.psql
-- models without probabilities say so
SELECT silvan.predict_proba('reg_squarederror', f) FROM fx_in LIMIT 1;
SELECT * FROM silvan.predict_proba_table('reg_squarederror', 'fx_many', 'k', '{f}') LIMIT 1;
\set fx rank_ndcg
\i sql/fixture.psql
:many
\i sql/outputs.psql
\set fx binary_logistic
\i sql/fixture.psql
:many
\i sql/outputs.psql
\set batch 64
\i sql/outputs.psql
\set batch 4096
\set fx multi_softprob
\i sql/fixture.psql
:many
\i sql/outputs.psql
\set batch 64
\i sql/outputs.psql

-- two threads: batches of 512 rows and more are pipelined
SET silvan.max_threads = 2;
\set batch 1024
\i sql/outputs.psql
\set fx binary_logistic
\i sql/fixture.psql
:many
\i sql/outputs.psql
RESET silvan.max_threads;

-- the reference interpreter
SET silvan.jit = off;
\i sql/outputs.psql
\set fx multi_softprob
\i sql/fixture.psql
:many
\i sql/outputs.psql
RESET silvan.jit;
DROP TABLE fx_many, fx_in, fx_exp;
