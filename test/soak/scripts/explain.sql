-- make soak: explain for a batch size
\set nt random(1, 2)
SET silvan.max_threads = :nt;
SELECT soak.explain();
