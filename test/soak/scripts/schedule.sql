-- make soak: set_schedule of a valid schedule, or NULL to remove one
\set nt random(1, 2)
SET silvan.max_threads = :nt;
SELECT soak.schedule();
