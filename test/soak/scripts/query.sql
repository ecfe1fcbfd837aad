-- make soak: predict_query, predict_proba_query or predict_raw_query of part of a table
-- (one and two threads; one call in ten by the reference interpreter)
\set nt random(1, 2)
SET silvan.max_threads = :nt;
\set jit least(random(0, 9), 1)
SET silvan.jit = :jit;
SELECT soak.scan_query();
