-- make soak: predict, predict_raw or predict_proba of 20 rows, one call per row
-- (one and two threads; one call in ten by the reference interpreter)
\set nt random(1, 2)
SET silvan.max_threads = :nt;
\set jit least(random(0, 9), 1)
SET silvan.jit = :jit;
SELECT soak.scalar();
