-- Scalar predict/predict_raw/predict_proba against XGBoost 1.7's own outputs
-- (test/fixtures, made by make_fixtures.py), for every objective, with
-- compiled code and again with the reference interpreter.
\set QUIET on
\set fx reg_squarederror
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_squaredlogerror
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_logistic
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_pseudohubererror
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_absoluteerror
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_gamma
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_tweedie
\i sql/fixture.psql
\i sql/check.psql
\set fx count_poisson
\i sql/fixture.psql
\i sql/check.psql
\set fx binary_logistic
\i sql/fixture.psql
\i sql/check.psql
\set fx binary_logitraw
\i sql/fixture.psql
\i sql/check.psql
\set fx binary_hinge
\i sql/fixture.psql
\i sql/check.psql
\set fx binary_base_score
\i sql/fixture.psql
\i sql/check.psql
\set fx multi_softmax
\i sql/fixture.psql
\i sql/check.psql
\set fx multi_softprob
\i sql/fixture.psql
\i sql/check.psql
\set fx rank_pairwise
\i sql/fixture.psql
\i sql/check.psql
\set fx rank_ndcg
\i sql/fixture.psql
\i sql/check.psql
\set fx rank_map
\i sql/fixture.psql
\i sql/check.psql
\set fx missing_nan
\i sql/fixture.psql
\i sql/check.psql
\set fx categorical
\i sql/fixture.psql
\i sql/check.psql
\set fx dart
\i sql/fixture.psql
\i sql/check.psql
\set fx parallel_tree
\i sql/fixture.psql
\i sql/check.psql
\set fx multi_parallel_tree
\i sql/fixture.psql
\i sql/check.psql
\set fx reg_base_score
\i sql/fixture.psql
\i sql/check.psql
\set fx deep_tree
\i sql/fixture.psql
\i sql/check.psql
\set fx one_feature
\i sql/fixture.psql
\i sql/check.psql
SET silvan.jit = off;
\set fx binary_logistic
\i sql/fixture.psql
\i sql/check.psql
\set fx multi_softprob
\i sql/fixture.psql
\i sql/check.psql
\set fx categorical
\i sql/fixture.psql
\i sql/check.psql
\set fx missing_nan
\i sql/fixture.psql
\i sql/check.psql
\set fx dart
\i sql/fixture.psql
\i sql/check.psql
RESET silvan.jit;
