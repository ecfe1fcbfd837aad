#!/usr/bin/python3
"""Benchmark silvan's batched scoring against XGBoost's own predict.

For each model (the treebeard set from ../shared/models and a few trained
here: deep, wide, many trees, multi-class) a table of rows is built (drawn
from the model's real inputs where they exist), then, in this one run on
this machine and on the same rows:

  - XGBoost inplace_predict over the rows in chunks of the batch size, with
    nthread=1 and nthread=2;
  - silvan.predict_table(..., batch_size) end to end (scan, batches, compiled
    code, one result row per source row) with silvan's default schedule, one
    thread and two threads;
  - silvan with the best of a small fixed set of schedules (one thread);

the first four timed in interleaved rounds (one run of each per round, silvan
in a session warmed by one untimed run) and each reported as the median over
the rounds, the best schedule as the median of several runs in one warm
session; µs per row, with the ratio to XGBoost single-thread.  Compile + first prediction in a
fresh backend, and compile time for an 800-tree model, are timed too.
Needs a running server (PGHOST/PGPORT from scripts/cluster.sh).
"""
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("SILVAN_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
TB = os.path.join(SHARED, "models", "asprasad_treebeard")
ROWS = int(os.environ.get("SILVAN_BENCH_ROWS", "100000"))
REPEAT = int(os.environ.get("SILVAN_BENCH_REPEAT", "7"))
BATCHES = [int(b) for b in os.environ.get("SILVAN_BENCH_BATCHES", "64,1024,8192").split(",")]
# Optional filters while working on one part: a comma list of model names,
# and SILVAN_BENCH_BEST=0 to skip the fixed set of schedules
ONLY = [m for m in os.environ.get("SILVAN_BENCH_MODELS", "").split(",") if m]
WITH_BEST = os.environ.get("SILVAN_BENCH_BEST", "1") != "0"
WORK = tempfile.mkdtemp(prefix="silvan-bench-")

# The small fixed set of schedules "best of" picks from
SCHEDULES = [
    "reorder(tree, batch)",
    "tile(batch, b0, b1, 64); reorder(b0, tree, b1); tile(b1, b2, b3, 8); interleave(b3)",
    "tile(batch, b0, b1, 256); reorder(b0, tree, b1); tile(b1, b2, b3, 16); interleave(b3); unrollWalk(b3, 8)",
    "tile(batch, b0, b1, 512); reorder(b0, tree, b1); tile(b1, b2, b3, 16); interleave(b3); representation(sparse)",
    "tile(batch, b0, b1, 128); tile(tree, t0, t1, 20); reorder(b0, t0, t1, b1); tile(b1, b2, b3, 16); interleave(b3)",
]


def psql(*commands, db="postgres"):
    """Run psql commands, one per line, in one fresh session; return stdout."""
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-f", "-"]
    script = "".join(c + ("\n" if c.startswith("\\") or c.endswith(";") else ";\n")
                     for c in commands)
    done = subprocess.run(args, input=script, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"psql failed: {done.stderr.strip()}")
    return done.stdout


def timed_ms(sql, times=1, setup=()):
    """Server round-trip times of a statement run `times` times in one fresh session."""
    out = psql(*setup, "\\timing on", *([sql] * times))
    return [float(l.split()[1]) for l in out.splitlines() if l.startswith("Time: ")]


def load_rows(csv_path):
    data = np.loadtxt(csv_path, delimiter=",", dtype=np.float64)
    return data[:, :-1].astype(np.float32)


def make_table(name, rows, storage="MAIN"):
    """A table bench_<name>(id, f real[] or f0..fn real).

    A wide row's array (over 2 kB) is kept in the row (STORAGE MAIN, as the
    README advises) unless storage says otherwise: EXTENDED, PostgreSQL's
    default, moves it out of line to the TOAST table."""
    wide = rows.shape[1] > 200
    cols = "f real[]" if wide else ", ".join(f"f{i} real" for i in range(rows.shape[1]))
    psql(f"DROP TABLE IF EXISTS bench_{name}", f"CREATE TABLE bench_{name} (id bigint, {cols})",
         *([f"ALTER TABLE bench_{name} ALTER COLUMN f SET STORAGE {storage}"] if wide else []))
    path = os.path.join(WORK, f"{name}.csv")
    with open(path, "w") as f:
        for i, r in enumerate(rows):
            vals = ",".join(repr(float(v)) for v in r)
            f.write(f'{i},"{{{vals}}}"\n' if wide else f"{i},{vals}\n")
    os.chmod(path, 0o644)
    psql(f"\\copy bench_{name} FROM '{path}' WITH (FORMAT csv)", f"VACUUM ANALYZE bench_{name}")


def train_models():
    """Models of our own: deep, wide, many trees, multi-class."""
    rng = np.random.default_rng(7)
    out = []
    specs = [
        ("deep", 20, dict(objective="reg:squarederror", max_depth=12), 100, 1),
        ("wide", 500, dict(objective="binary:logistic", max_depth=6), 200, 1),
        ("many", 30, dict(objective="reg:squarederror", max_depth=6), 1000, 1),
        ("multi", 30, dict(objective="multi:softprob", num_class=10, max_depth=6), 50, 10),
    ]
    for name, nf, params, rounds, classes in specs:
        X = rng.normal(size=(20000, nf)).astype(np.float32)
        w = rng.normal(size=nf)
        z = X @ w + 0.5 * np.sin(3 * X[:, 0]) * X[:, 1]
        if classes > 1:
            y = np.digitize(z, np.quantile(z, np.linspace(0, 1, classes + 1)[1:-1]))
        elif params["objective"] == "binary:logistic":
            y = (z > 0).astype(np.float32)
        else:
            y = z
        if ONLY and name not in ONLY:
            continue            # its rows were drawn all the same: later models stay the same
        booster = xgb.train({**params, "nthread": 2, "seed": 1}, xgb.DMatrix(X, label=y), rounds)
        path = os.path.join(WORK, f"{name}.json")
        booster.save_model(path)
        out.append((name, path, X))
    return out


def treebeard_models():
    if not os.path.isdir(TB):
        print(f"(treebeard models not found at {TB}; skipping them)")
        return []
    out = []
    for name, stem, csv in [
        ("airline", "xgb_models--airline_xgb_model_save.json", "xgb_models--airline_xgb_model_save.json.test.sampled.csv"),
        ("higgs", "xgb_models--higgs_xgb_model_save.json", "xgb_models--higgs_xgb_model_save.json.test.sampled.csv"),
        ("year", "xgb_models--year_prediction_msd_xgb_model_save.json", "xgb_models--year_prediction_msd_xgb_model_save.json.csv"),
    ]:
        out.append((name, os.path.join(TB, stem), load_rows(os.path.join(TB, csv))))
    return out


def xgb_booster(model_path, rows, batch, threads):
    """A warm XGBoost booster with nthread = threads."""
    booster = xgb.Booster(model_file=model_path)
    booster.set_param({"nthread": threads})
    booster.inplace_predict(rows[:batch])
    return booster


def xgb_pass_us_per_row(booster, rows, batch):
    """One pass of inplace_predict over the rows in chunks of the batch size."""
    t = time.perf_counter()
    for s in range(0, len(rows), batch):
        booster.inplace_predict(rows[s:s + batch])
    return (time.perf_counter() - t) / len(rows) * 1e6


def silvan_once_us_per_row(name, batch, nrows, threads):
    """One timed predict_table in a session warmed by one untimed run."""
    sql = f"SELECT count(prediction) FROM silvan.predict_table('{name}', 'bench_{name}', 'id', batch_size => {batch})"
    return timed_ms(sql, 2, [f"SET silvan.max_threads = {threads}"])[1] * 1000.0 / nrows


def interleaved_us_per_row(name, model_path, rows, batch):
    """Medians of REPEAT rounds, each timing XGBoost 1 and 2 threads and
    silvan 1 and 2 threads once, so that a burst of load from elsewhere on
    the machine hits a round of all four rather than one series."""
    boosters = [xgb_booster(model_path, rows, batch, t) for t in (1, 2)]
    series = [[], [], [], []]
    for _ in range(REPEAT):
        series[0].append(xgb_pass_us_per_row(boosters[0], rows, batch))
        series[1].append(xgb_pass_us_per_row(boosters[1], rows, batch))
        series[2].append(silvan_once_us_per_row(name, batch, len(rows), 1))
        series[3].append(silvan_once_us_per_row(name, batch, len(rows), 2))
    return [statistics.median(s) for s in series]


def silvan_us_per_row(name, batch, nrows, threads=1, schedule=None):
    setup = [f"SET silvan.max_threads = {threads}"]
    if schedule:
        psql(f"SELECT silvan.set_schedule('{name}', $s${schedule}$s$, batch_size => {batch})")
    sql = f"SELECT count(prediction) FROM silvan.predict_table('{name}', 'bench_{name}', 'id', batch_size => {batch})"
    ms = statistics.median(timed_ms(sql, REPEAT + 1, setup)[1:])
    if schedule:
        psql(f"SELECT silvan.set_schedule('{name}', NULL, batch_size => {batch})")
    return ms * 1000.0 / nrows


def main():
    psql("CREATE EXTENSION IF NOT EXISTS silvan")
    rng = np.random.default_rng(42)
    models = [m for m in treebeard_models() + train_models() if not ONLY or m[0] in ONLY]
    print(f"µs per row, {ROWS} rows (wide: {ROWS // 5}); XGBoost {xgb.__version__} inplace_predict; "
          f"silvan predict_table end to end; medians of {REPEAT}")
    print(f"{'model':<8} {'batch':>5} {'xgb 1t':>7} {'xgb 2t':>7} {'silvan':>7} {'2 thr':>7} "
          f"{'best':>7} {'speedup':>8} {'best x':>7} {'2t/1t':>6}  compile+first")
    ratios = {}
    for name, model_path, base in models:
        n = ROWS // 5 if base.shape[1] > 200 else ROWS
        rows = base[rng.integers(0, len(base), n)]
        make_table(name, rows)
        psql(f"SELECT silvan.drop_model('{name}')", f"\\set m `cat {model_path}`",
             f"SELECT silvan.load_model('{name}', :'m')")
        one = "'{" + ",".join(repr(float(v)) for v in base[0]) + "}'::real[]"
        first = statistics.median(timed_ms(f"SELECT silvan.predict('{name}', {one})")[0] for _ in range(3))
        for batch in BATCHES:
            x1, x2, ours, ours2 = interleaved_us_per_row(name, model_path, rows, batch)
            best = min([ours] + [silvan_us_per_row(name, batch, n, schedule=s)
                                 for s in (SCHEDULES if WITH_BEST else [])])
            ratios.setdefault(batch, []).append(x1 / ours)
            print(f"{name:<8} {batch:>5} {x1:>7.3f} {x2:>7.3f} {ours:>7.3f} {ours2:>7.3f} {best:>7.3f} "
                  f"{x1 / ours:>7.2f}x {x1 / best:>6.2f}x {ours / ours2:>5.2f}x  {first:.1f} ms",
                  flush=True)
    for batch, r in sorted(ratios.items()):
        geo = math.exp(sum(math.log(v) for v in r) / len(r))
        print(f"geometric mean speedup over XGBoost 1 thread at batch {batch}: {geo:.2f}x")
    wide = next((m for m in models if m[0] == "wide"), None)
    if wide:
        n = ROWS // 5
        make_table("wide_toast", wide[2][rng.integers(0, len(wide[2]), n)], storage="EXTENDED")
        psql("SELECT silvan.drop_model('wide_toast')", f"\\set m `cat {wide[1]}`",
             "SELECT silvan.load_model('wide_toast', :'m')")
        print(f"wide with the array out of line (STORAGE EXTENDED, the default), batch 1024: "
              f"{silvan_us_per_row('wide_toast', 1024, n):.3f} us/row")
    many = next((m for m in models if m[0] == "many"), None)
    if many:
        ms = [timed_ms(f"SELECT silvan.explain('many', 4096) IS NOT NULL")[0] for _ in range(3)]
        print(f"compile (explain, fresh session) of the 1000-tree model: {statistics.median(ms):.1f} ms")


if __name__ == "__main__":
    main()
