-- make soak: predict_table, predict_proba_table or predict_raw_table of a 4,000-row table
-- (one and two threads; one call in ten by the reference interpreter)
\set nt random(1, 2)
SET silvan.max_threads = :nt;
\set jit least(random(0, 9), 1)
SET silvan.jit = :jit;
SELECT soak.scan_table();
