#!/usr/bin/python3
"""Benchmark silvan's batched scoring against XGBoost's own predict.

For each model: build a 100k-row table (rows drawn with replacement from
the model's real test inputs), then time, in this one run and on this
machine,
  - silvan.predict_table(...) end to end (scan, batch, JIT code, results),
    in one session after a warm-up run (compilation is timed separately),
  - XGBoost inplace_predict on the same rows, nthread=1,
each as the median of several repetitions, and report rows/s and the
ratio.  Also times compile + first prediction in a fresh backend.
Needs a running server (PGHOST/PGPORT from scripts/cluster.sh).
"""
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
REPEAT = int(os.environ.get("SILVAN_BENCH_REPEAT", "5"))

MODELS = [
    ("higgs", "xgb_models--higgs_xgb_model_save.json", "xgb_models--higgs_xgb_model_save.json.test.sampled.csv"),
    ("airline", "xgb_models--airline_xgb_model_save.json", "xgb_models--airline_xgb_model_save.json.test.sampled.csv"),
    ("year", "xgb_models--year_prediction_msd_xgb_model_save.json", "xgb_models--year_prediction_msd_xgb_model_save.json.csv"),
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


def timed_ms(sql, times=1):
    """Server round-trip times of a statement run `times` times in one fresh session."""
    out = psql("\\timing on", *([sql] * times))
    return [float(l.split()[1]) for l in out.splitlines() if l.startswith("Time: ")]


def load_rows(csv_path):
    data = np.loadtxt(csv_path, delimiter=",", dtype=np.float64)
    return data[:, :-1].astype(np.float32)


def make_table(name, rows):
    cols = ", ".join(f"f{i} real" for i in range(rows.shape[1]))
    psql(f"DROP TABLE IF EXISTS bench_{name}", f"CREATE TABLE bench_{name} (id bigint, {cols})")
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        for i, r in enumerate(rows):
            f.write(str(i) + "," + ",".join(repr(float(v)) for v in r) + "\n")
        path = f.name
    os.chmod(path, 0o644)
    psql(f"\\copy bench_{name} FROM '{path}' WITH (FORMAT csv)", f"VACUUM ANALYZE bench_{name}")
    os.unlink(path)


def bench_xgboost(model_path, rows):
    booster = xgb.Booster(model_file=model_path)
    booster.set_param({"nthread": 1})
    booster.inplace_predict(rows[:100])
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        booster.inplace_predict(rows)
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times)


def main():
    if not os.path.isdir(TB):
        sys.exit(f"bench needs the shared models at {TB}")
    psql("CREATE EXTENSION IF NOT EXISTS silvan")
    rng = np.random.default_rng(42)
    print(f"{'model':<9} {'rows':>7} {'silvan ms':>10} {'xgboost ms':>11} {'silvan rows/s':>14} "
          f"{'xgboost rows/s':>15} {'speedup':>8} {'compile+first ms':>17}")
    for name, model_file, csv_file in MODELS:
        model_path = os.path.join(TB, model_file)
        base = load_rows(os.path.join(TB, csv_file))
        rows = base[rng.integers(0, len(base), ROWS)]
        make_table(name, rows)
        psql(f"SELECT silvan.drop_model('{name}')",
             f"\\set m `cat {model_path}`",
             f"SELECT silvan.load_model('{name}', :'m')")
        one_row = f"SELECT silvan.predict('{name}', '{{{','.join(repr(float(v)) for v in base[0])}}}'::real[])"
        first = statistics.median(timed_ms(one_row)[0] for _ in range(3))
        sql = f"SELECT count(prediction) FROM silvan.predict_table('{name}', 'bench_{name}', 'id')"
        ours = statistics.median(timed_ms(sql, REPEAT + 1)[1:])
        theirs = bench_xgboost(model_path, rows)
        print(f"{name:<9} {ROWS:>7} {ours:>10.1f} {theirs:>11.1f} {ROWS / ours * 1000:>14.0f} "
              f"{ROWS / theirs * 1000:>15.0f} {theirs / ours:>7.2f}x {first:>17.1f}")
    print(f"(medians of {REPEAT}; XGBoost {xgb.__version__} inplace_predict nthread=1; "
          f"silvan end to end through predict_table; compile+first = first statement of a fresh session)")


if __name__ == "__main__":
    main()
