"""What each part of scoring on Citus costs, on this machine (make bench-citus).

Run by test/bench/citus.sh against a coordinator and two workers it started
(test/citus/nodes.sh), the higgs model distributed with silvan.distribute()
and two tables of the same distinct rows: "ev" distributed by id over the
two workers, "ev_local" a plain table of the coordinator.  Times, as medians
of interleaved rounds:

- one server: count(predict()) over ev_local, on the coordinator, no Citus
  in the way; and XGBoost's own predict() on one thread, on the same rows;
- each worker alone: the shard queries of its shards, run on the worker
  (the other worker idle): its scoring rate;
- the cluster: count(predict()) over ev (one row per shard comes back),
  with Citus' default connection cache (a statement's shard queries past
  the first per worker start a new backend there, which loads the model)
  and with citus.max_cached_conns_per_worker at 8 (warm backends),
  INSERT ... SELECT into a colocated table (row counts come back), and
  SELECT id, predict() (every result row comes back to the coordinator,
  kept there in a temporary table), and the same SELECT without predict():
  the coordinator's share per result row.

On a 2-core machine the two workers share the cores, so the cluster's
figures measure overheads, not speed-up; docs/scale-out.md turns the
per-part costs into a model of throughput against the number of workers.
"""
import os
import statistics
import sys
import time

import numpy as np
import psycopg
import xgboost

ROUNDS = int(os.environ.get("SILVAN_BENCH_ROUNDS", "5"))
MODEL = "higgs"


def connect(port):
    return psycopg.connect(host="localhost", port=port, user="postgres", dbname="postgres",
                           autocommit=True)


def timed(conn, sql):
    """Seconds one statement takes, from the client"""
    start = time.perf_counter()
    conn.execute(sql)
    return time.perf_counter() - start


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    rows_path, model_path = sys.argv[1], sys.argv[2]
    coordinator = connect(57636)
    workers = {port: connect(port) for port in (57637, 57638)}
    n = coordinator.execute("SELECT count(*) FROM ev").fetchone()[0]
    shards = {}
    for shard, port in coordinator.execute(
            "SELECT s.shardid, p.nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)"
            " WHERE s.logicalrelid = 'ev'::regclass"):
        shards.setdefault(port, []).append(shard)
    worker_rows = {port: sum(workers[port].execute("SELECT count(*) FROM ev_%d" % s).fetchone()[0]
                             for s in ids) for port, ids in shards.items()}

    # XGBoost on the same rows, one thread
    with open(rows_path) as f:
        features = np.array([[np.float32(v) for v in line.split('"')[1][1:-1].split(",")] for line in f],
                            dtype=np.float32)
    xgboost.set_config(verbosity=0)
    booster = xgboost.Booster()
    booster.load_model(model_path)
    booster.set_param({"nthread": 1})

    def xgb():
        # inplace_predict: no DMatrix, and no prediction cache to replay
        start = time.perf_counter()
        booster.inplace_predict(features, missing=np.nan, validate_features=False)
        return time.perf_counter() - start

    measures = {
        "one server: count(predict()), plain table": lambda: timed(
            coordinator, "SELECT count(silvan.predict('%s', f)) FROM ev_local" % MODEL),
        "XGBoost predict(), one thread": xgb,
    }
    for port, ids in shards.items():
        def one_worker(port=port, ids=ids):
            return sum(timed(workers[port], "SELECT count(silvan.predict('%s', f)) FROM ev_%d" % (MODEL, s))
                       for s in ids)
        measures["worker %d alone: its shards' queries" % port] = one_worker
    warm = connect(57636)
    warm.execute("SET citus.max_cached_conns_per_worker = 8")
    measures.update({
        "cluster: count(predict()), Citus' default connection cache (1 per worker)": lambda: timed(
            coordinator, "SELECT count(silvan.predict('%s', f)) FROM ev" % MODEL),
        "cluster: count(predict()), 8 connections cached per worker": lambda: timed(
            warm, "SELECT count(silvan.predict('%s', f)) FROM ev" % MODEL),
        "cluster: INSERT ... SELECT predict()": lambda: timed(
            coordinator, "INSERT INTO scores SELECT id, silvan.predict('%s', f) FROM ev" % MODEL),
        "cluster: SELECT id, predict() to the coordinator": lambda: timed(
            coordinator, "CREATE TEMP TABLE pulled AS SELECT id, silvan.predict('%s', f) AS p FROM ev" % MODEL),
        "cluster: SELECT id, score to the coordinator (no scoring)": lambda: timed(
            coordinator, "CREATE TEMP TABLE pulled AS SELECT id, f[1]::float8 AS p FROM ev"),
    })
    cleanup = {
        "cluster: INSERT ... SELECT predict()": "TRUNCATE scores",
        "cluster: SELECT id, predict() to the coordinator": "DROP TABLE pulled",
        "cluster: SELECT id, score to the coordinator (no scoring)": "DROP TABLE pulled",
    }
    # warm every backend: compiled code, connections, caches
    for name, run in measures.items():
        run()
        if name in cleanup:
            coordinator.execute(cleanup[name])
    times = {name: [] for name in measures}
    for _ in range(ROUNDS):
        for name, run in measures.items():
            times[name].append(run())
            if name in cleanup:
                coordinator.execute(cleanup[name])

    def per_row(name, rows):
        return statistics.median(times[name]) / rows * 1e6

    print("silvan on Citus, %s (%d vCPUs), %d distinct rows of %s, medians of %d interleaved rounds"
          % (cpu_name(), os.cpu_count(), n, MODEL, ROUNDS))
    print("coordinator and two workers on this one machine; worker rows: %s"
          % ", ".join("%d: %d" % (p, r) for p, r in sorted(worker_rows.items())))
    print()
    print("| measure | µs per row | ratio to one server |")
    print("|---|---|---|")
    base = per_row("one server: count(predict()), plain table", n)
    for name in measures:
        rows = worker_rows[int(name.split()[1])] if name.startswith("worker ") else n
        us = per_row(name, rows)
        print("| %s | %.3f | %.2f |" % (name, us, us / base))
    pulled = per_row("cluster: SELECT id, predict() to the coordinator", n)
    moved = per_row("cluster: SELECT id, score to the coordinator (no scoring)", n)
    print()
    print("coordinator's share per result row (moving a row, no scoring): %.3f µs" % moved)
    print("scoring share of the SELECT to the coordinator: %.3f µs per row" % (pulled - moved))


main()
