#!/usr/bin/python3
"""make bench: silvan against the peer tree compilers, on the same rows.

Models: the treebeard XGBoost set (airline, higgs, year), four XGBoost
models trained here (deep, wide, many trees, multi-class) and the LightGBM
models of lleaves' tests (nyc_taxi, mtpl2, lgbm_multiclass, lgbm_airline,
boston).  Every model is timed on SILVAN_BENCH_ROWS distinct rows, never a
replay (a branch predictor learns replayed rows and flatters branchy code):
the treebeard models' real inputs (their CSVs), each used once, then rows
synthesized from the model's own split thresholds; the LightGBM models,
which come without inputs, synthesized rows alone; the models trained here,
fresh draws of their training distribution.  A synthesized feature is
uniform between consecutive split thresholds (each cell equally likely),
with a share of its values exactly at a threshold and a share NaN; a
categorical feature takes one of its categories.  Every draw has a fixed
seed per model, and the run stops if a model's rows repeat.  The report's
header says so, and names the CPU: vendor, model name, family, model and
stepping, AVX-512 or not, and LLVM's name for it (llvm_host_cpu).  Before
and after each model's rounds it measures how long a cache line takes to
go from one core to another and back (bench_kernel --core-latency): a scan
on two threads passes rows and results between the cores, so its speed
over one thread's depends on that figure, which on a VM moves with where
the host places the vCPUs (on one machine here, 90 ns for some hours and
440 ns for others); the report gives it beside the two-thread tables.

On those rows, in this one run on this machine, with 1 and 2 threads and
each batch size, it times:

  silvan e2e      silvan.predict_table(..., batch_size) end to end from SQL
                  (scan, batches, compiled code, one result row per source
                  row: SELECT count(prediction) FROM ...), in a session
                  warmed by one untimed run; silvan.max_threads = threads
  silvan kernel   the compiled forest alone on an in-memory array of the
                  same rows (bench_kernel --serve), chunks of batch_size,
                  margins and predict()'s outputs
  lleaves         Model.predict(chunk, n_jobs) (LightGBM models)
  TL2cgen         Predictor(nthread).predict(DMatrix) (both formats; the
                  DMatrix of each chunk is built outside the timing)
  XGBoost         Booster.inplace_predict(chunk), nthread (XGBoost models)
  HB tree_trav, HB perf_tree_trav
                  Hummingbird's torch backend, predict / predict_proba
                  (XGBoost models), torch.set_num_threads

in interleaved rounds (each round runs every engine and thread count once,
in a shuffled order, so that a burst of load from elsewhere hits a round
rather than one engine's series) and reports each as the median over the
rounds, in µs per row.  Peers run in worker processes of their own
(peer_worker.py), the kernel in bench_kernel; each gets the rows once, in
its own input type, and is warmed by one untimed pass.  Before timing,
every engine's predictions on all rows are compared with silvan's
predict_table (predict_proba_table for multi-class models): a mismatch is
printed loudly and marked in the tables.  Compile times: silvan's first
predict in a fresh backend (the server preloads silvan; the median of three
sessions, so a code cache load) and its compile at batch 1024 (in bench_kernel);
lleaves compile(), TL2cgen export_lib and Hummingbird's convert (each cached by
model hash under SILVAN_BENCH_CACHE, with the time measured when it was
built).

Tuning (SILVAN_BENCH_TUNE): for each model and batch size 64 and 1024, one
thread, silvan.tune() (heuristic) on the model's bench table, then silvan
end to end with the default schedule and with the tuned one stored, in
interleaved rounds, beside the best of the fixed schedules; on a few models
the heuristic search against the exhaustive one, in tune()'s own timing.
The report's Tuning table and PASS/FAIL notes hold tune()'s bars.

Environment:
  SILVAN_BENCH_MODELS   comma list of model names (default: all)
  SILVAN_BENCH_BATCHES  comma list of batch sizes (default 64,1024,8192)
  SILVAN_BENCH_REPEAT   interleaved rounds (default 7)
  SILVAN_BENCH_BEST     0 skips silvan's small fixed set of schedules
  SILVAN_BENCH_TUNE     0 skips the tuning section (silvan.tune(), see tune_section)
  SILVAN_BENCH_TUNE_MODELS   comma list of the models tuned (default: every
                        model of the run)
  SILVAN_BENCH_TUNE_BATCHES  batch sizes tuned (default 64,1024)
  SILVAN_BENCH_TUNE_BUDGET   the heuristic search's budget (default 60 seconds)
  SILVAN_BENCH_TUNE_EXHAUSTIVE  comma list of the models also searched
                        exhaustively (default: the two of the run whose first
                        predict compiled fastest; none: no exhaustive search)
  SILVAN_BENCH_TUNE_EXHAUSTIVE_BUDGET  its budget (default 15 minutes)
  SILVAN_BENCH_PEERS    comma list of lleaves, tl2cgen, xgboost, hb_tree_trav,
                        hb_perf_tree_trav (hb = both), kernel; none for
                        silvan e2e alone (default: all)
  SILVAN_BENCH_FORMS    0 skips the SQL forms section (sql_forms, see there)
  SILVAN_BENCH_FORMS_MODELS  comma list of the models it runs on (default:
                        higgs,airline,year; XGBoost models with feature columns)
  SILVAN_BENCH_ROWS     distinct rows per model (default 100000, wide too)
  SILVAN_BENCH_ROUND_SECONDS  fewer rows (not below 100000) for a model whose
                        round of every engine would take longer (default 4);
                        a batch size whose rounds take over twice the budget
                        stops after 3 rounds (said in the notes)
  SILVAN_BENCH_OUT      markdown report (default test/bench/last.md)
  SILVAN_BENCH_CACHE    compiled peer artifacts (default ~/.cache/silvan-bench)
  SILVAN_BENCH_KERNEL   the bench_kernel binary (default test/bench/build/bench_kernel)
  SILVAN_BENCH_PEERS_PYTHONPATH  PYTHONPATH of the peers (run.sh sets it from
                        the peers' setup.sh)
Needs a running server (PGHOST/PGPORT from scripts/cluster.sh).
"""
import atexit
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
import xgboost as xgb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("SILVAN_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
TB = os.path.join(SHARED, "models", "asprasad_treebeard")
LL = os.path.join(SHARED, "models", "siboehm_lleaves")
ROWS = int(os.environ.get("SILVAN_BENCH_ROWS", "100000"))
# A model whose round (every engine, 1 and 2 threads, once) would take longer
# than this many seconds on ROWS rows is timed on fewer (its first rows,
# at least MIN_ROWS), so that the slowest engines and models do not take
# the whole run: what one round costs is estimated from one pass of each
# engine at the first batch size (the table says how many rows each model ran).
# MIN_ROWS is the fewest rows a model is timed on (where ROWS is not fewer)
ROUND_SECONDS = float(os.environ.get("SILVAN_BENCH_ROUND_SECONDS", "4"))
MIN_ROWS = 100000
REPEAT = int(os.environ.get("SILVAN_BENCH_REPEAT", "7"))
SETTLE_SECONDS = 0.05     # before each timing (settle())
BATCHES = [int(b) for b in os.environ.get("SILVAN_BENCH_BATCHES", "64,1024,8192").split(",")]
ONLY = [m for m in os.environ.get("SILVAN_BENCH_MODELS", "").split(",") if m]
WITH_BEST = os.environ.get("SILVAN_BENCH_BEST", "1") != "0"
WITH_TUNE = os.environ.get("SILVAN_BENCH_TUNE", "1") != "0"
WITH_FORMS = os.environ.get("SILVAN_BENCH_FORMS", "1") != "0"
FORMS_MODELS = [m for m in os.environ.get("SILVAN_BENCH_FORMS_MODELS", "higgs,airline,year").split(",") if m]
TUNE_ONLY = [m for m in os.environ.get("SILVAN_BENCH_TUNE_MODELS", "").split(",") if m]
TUNE_BATCHES = [int(b) for b in os.environ.get("SILVAN_BENCH_TUNE_BATCHES", "64,1024").split(",")]
TUNE_BUDGET = os.environ.get("SILVAN_BENCH_TUNE_BUDGET", "60 seconds")
TUNE_EXHAUSTIVE = os.environ.get("SILVAN_BENCH_TUNE_EXHAUSTIVE", "").strip()
TUNE_EXHAUSTIVE_BUDGET = os.environ.get("SILVAN_BENCH_TUNE_EXHAUSTIVE_BUDGET", "15 minutes")
# The tuning section's bars: tuned end to end no slower than the
# default beyond this noise; heuristic within 5% of exhaustive in at most a
# tenth of its time; one model and batch size tuned in under a minute
TUNE_NOISE = 0.03
TUNE_BAR_QUALITY = 1.05
TUNE_BAR_TIME = 0.1
TUNE_BAR_SECONDS = 60.0
OUT = os.environ.get("SILVAN_BENCH_OUT") or os.path.join(HERE, "last.md")
CACHE = os.environ.get("SILVAN_BENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "silvan-bench")
KERNEL = os.environ.get("SILVAN_BENCH_KERNEL") or os.path.join(HERE, "build", "bench_kernel")
PEERS_PYTHONPATH = os.environ.get("SILVAN_BENCH_PEERS_PYTHONPATH", "")
THREADS = (1, 2)
WORK = tempfile.mkdtemp(prefix="silvan-bench-")
atexit.register(shutil.rmtree, WORK, True)

# Engines, in table order; silvan e2e is not optional
ENGINES = ["kernel", "lleaves", "tl2cgen", "xgboost", "hb_tree_trav", "hb_perf_tree_trav"]
PEERS = ENGINES[1:]
TITLES = {"e2e": "silvan e2e", "kernel": "silvan kernel", "lleaves": "lleaves", "tl2cgen": "TL2cgen",
          "xgboost": "XGBoost", "hb_tree_trav": "HB tree_trav", "hb_perf_tree_trav": "HB perf_tree_trav"}
FORMATS = {"kernel": ("xgboost", "lightgbm"), "lleaves": ("lightgbm",), "tl2cgen": ("xgboost", "lightgbm"),
           "xgboost": ("xgboost",), "hb_tree_trav": ("xgboost",), "hb_perf_tree_trav": ("xgboost",)}


def chosen_engines():
    text = os.environ.get("SILVAN_BENCH_PEERS", "").strip()
    if not text:
        return set(ENGINES)
    if text == "none":
        return set()
    out = set()
    for w in text.split(","):
        w = w.strip()
        if w == "hb":
            out |= {"hb_tree_trav", "hb_perf_tree_trav"}
        elif w in ENGINES:
            out.add(w)
        elif w:
            sys.exit(f"SILVAN_BENCH_PEERS: unknown engine {w!r} (known: {', '.join(ENGINES)}, hb, none)")
    return out


CHOSEN = chosen_engines()

# The small fixed set of schedules "best of" picks from
SCHEDULES = [
    "reorder(tree, batch)",
    "tile(batch, b0, b1, 64); reorder(b0, tree, b1); tile(b1, b2, b3, 8); interleave(b3)",
    "tile(batch, b0, b1, 256); reorder(b0, tree, b1); tile(b1, b2, b3, 16); interleave(b3); unrollWalk(b3, 8)",
    "tile(batch, b0, b1, 512); reorder(b0, tree, b1); tile(b1, b2, b3, 16); interleave(b3); representation(sparse)",
    "tile(batch, b0, b1, 128); tile(tree, t0, t1, 20); reorder(b0, t0, t1, b1); tile(b1, b2, b3, 16); interleave(b3)",
]

REPORT = []      # markdown lines of the report
WARNINGS = []    # mismatches and engines that failed
NOTES = []       # rounds cut short
LATENCY = {}     # model -> cross-core round trips (ns) before and after its rounds


def say(line=""):
    print(line, flush=True)


def warn(line):
    say("!!! " + line)
    WARNINGS.append(line)


# ---- PostgreSQL ----

def psql_run(*commands, db="postgres"):
    """Run psql commands, one per line, in one fresh session; return
    (stdout, None), or (None, the error) when one failed."""
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-f", "-"]
    script = "".join(c + ("\n" if c.startswith("\\") or c.endswith(";") else ";\n")
                     for c in commands)
    done = subprocess.run(args, input=script, capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip()
    return done.stdout, None


def psql(*commands, db="postgres", check=True):
    """Run psql commands, one per line, in one fresh session; return stdout
    (None on an error when check is false)."""
    out, error = psql_run(*commands, db=db)
    if error is not None:
        if not check:
            return None
        sys.exit(f"psql failed: {error}")
    return out


def timed_ms(sql, times=1, setup=()):
    """Server round-trip times of a statement run `times` times in one fresh session."""
    out = psql(*setup, "\\timing on", *([sql] * times))
    return [float(l.split()[1]) for l in out.splitlines() if l.startswith("Time: ")]


def feature_columns(name, nf):
    """Column names for the model's features: its own feature names where it
    has them (predict_table matches columns to features by name), else f0..fn"""
    out = psql(f"SELECT coalesce(name, '') FROM silvan.model_features WHERE model = '{name}' ORDER BY position",
               check=False)
    names = out.split("\n")[:nf] if out is not None else []
    if len(names) != nf or "" in names or len(set(names)) != nf or "id" in names:
        return [f"f{i}" for i in range(nf)]
    return names


def make_table(name, rows, sqltype, storage="MAIN", columns=None):
    """A table bench_<name>(id, f sqltype[] or one sqltype column per feature,
    named by columns or f0..fn), row i has id i.

    A wide row's array (over 2 kB) is kept in the row (STORAGE MAIN, as the
    README advises) unless storage says otherwise: EXTENDED, PostgreSQL's
    default, moves it out of line to the TOAST table."""
    wide = rows.shape[1] > 200
    columns = columns or [f"f{i}" for i in range(rows.shape[1])]
    quoted = ['"' + c.replace('"', '""') + '"' for c in columns]
    cols = f"f {sqltype}[]" if wide else ", ".join(f"{c} {sqltype}" for c in quoted)
    psql(f"DROP TABLE IF EXISTS bench_{name}", f"CREATE TABLE bench_{name} (id bigint, {cols})",
         *([f"ALTER TABLE bench_{name} ALTER COLUMN f SET STORAGE {storage}"] if wide else []))
    path = os.path.join(WORK, f"{name}.csv")
    data = np.column_stack([np.arange(len(rows), dtype=np.float64), rows])
    # %.17g gives every double exactly (and so every float widened to double)
    if wide:
        fmt = '%d,"{' + ",".join(["%.17g"] * rows.shape[1]) + '}"'
    else:
        fmt = ",".join(["%d"] + ["%.17g"] * rows.shape[1])
    np.savetxt(path, data, fmt=fmt)
    os.chmod(path, 0o644)
    psql(f"\\copy bench_{name} FROM '{path}' WITH (FORMAT csv)", f"VACUUM ANALYZE bench_{name}")


def load_model(name, path):
    psql(f"SELECT silvan.drop_model('{name}')", f"\\set m `cat {path}`",
         f"SELECT silvan.load_model('{name}', :'m')")
    trees, depth, nf, task = psql(
        f"SELECT num_trees, max_depth, num_features, task FROM silvan.models WHERE name = '{name}'"
    ).strip().split("|")
    return int(trees), int(depth), int(nf), task


def silvan_outputs(name, multi, n):
    """predict_table's predictions (predict_proba_table's for multi-class), by key."""
    if multi:
        out = psql(f"SELECT key, probabilities FROM silvan.predict_proba_table('{name}', 'bench_{name}', 'id', "
                   f"batch_size => 1024) ORDER BY key")
        vals = [[float(v) for v in l.split("|")[1].strip("{}").split(",")] for l in out.splitlines()]
    else:
        out = psql(f"SELECT key, prediction FROM silvan.predict_table('{name}', 'bench_{name}', 'id', "
                   f"batch_size => 1024) ORDER BY key")
        vals = [[float(l.split("|")[1])] for l in out.splitlines()]
    a = np.array(vals, dtype=np.float64)
    if len(a) != n:
        sys.exit(f"predict_table on bench_{name} returned {len(a)} rows, not {n}")
    return a


def settle():
    """Let the machine go quiet before a timing: an OpenMP peer's threads
    spin for a few milliseconds after its pass (libgomp's GOMP_SPINCOUNT),
    on the cores the next engine's threads would use, so a timing that
    followed one at once ran on a core and a half (silvan's kernel on two
    threads right after XGBoost's pass: 0.19 against 0.155 µs per row on
    higgs).  Each engine's timing now starts SETTLE_SECONDS after the last."""
    time.sleep(SETTLE_SECONDS)


def core_latency_ns():
    """A cache line's round trip between two cores, in ns (bench_kernel
    --core-latency), or None when it cannot be measured"""
    try:
        out = subprocess.run([KERNEL, "--core-latency"], capture_output=True, text=True, timeout=60).stdout
        ns = float(out.split()[1])
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None
    return ns if ns > 0 else None


def latency_text(names):
    """The cross-core round trips measured around these models' rounds, in words"""
    parts = []
    for name in names:
        got = [f"{v:.0f}" for v in LATENCY.get(name, ()) if v is not None]
        if got:
            parts.append(f"{name} {' and '.join(got)}")
    return "; ".join(parts)


def one_backend(threads):
    """A session's settings for silvan in one backend with that many threads:
    the peers' thread counts are threads of one process, and PostgreSQL
    would plan a big bench table's scan in parallel"""
    return [f"SET silvan.max_threads = {threads}", "SET max_parallel_workers_per_gather = 0"]


def silvan_once_us_per_row(name, batch, nrows, threads, table=None):
    """One timed predict_table in a session warmed by one untimed run (on
    bench_<name>, or table)."""
    table = table or f"bench_{name}"
    sql = f"SELECT count(prediction) FROM silvan.predict_table('{name}', '{table}', 'id', batch_size => {batch})"
    return timed_ms(sql, 2, one_backend(threads))[1] * 1000.0 / nrows


def silvan_us_per_row(name, batch, nrows, threads=1, schedule=None):
    """Median of 3 runs of predict_table in a session warmed by one more."""
    setup = one_backend(threads)
    if schedule:
        psql(f"SELECT silvan.set_schedule('{name}', $s${schedule}$s$, batch_size => {batch})")
    sql = f"SELECT count(prediction) FROM silvan.predict_table('{name}', 'bench_{name}', 'id', batch_size => {batch})"
    ms = statistics.median(timed_ms(sql, 4, setup)[1:])
    if schedule:
        psql(f"SELECT silvan.set_schedule('{name}', NULL, batch_size => {batch})")
    return ms * 1000.0 / nrows



# ---- SQL forms: the same model in the SQL users write ----

def parallel_setup(workers):
    """A parallel plan of that many workers (the leader only gathers), one thread each"""
    return [f"SET max_parallel_workers_per_gather = {workers}", "SET parallel_setup_cost = 0",
            "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0",
            "SET parallel_leader_participation = off", "SET silvan.max_threads = 1"]


def sql_forms(name, n, columns, worker):
    """µs per row of each SQL form over bench_<name>'s n rows, at 1 and 2
    threads (silvan.max_threads) or parallel workers, and XGBoost's
    inplace_predict at batch 1024 on the same rows (worker), in interleaved
    rounds: {(form, threads): median}.  Each timing is a fresh session's
    second run of the statement (the first loads the model and warms it);
    an UPDATE's is its only run, in a transaction that is rolled back, on a
    copy of the table vacuumed first."""
    cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    array = f"ARRAY[{cols}]::real[]"
    forms = {
        "PostgreSQL alone: count(ARRAY[...])": (f"SELECT count({array}) FROM bench_{name}", []),
        # its default batch size, as users call it
        "predict_table": (f"SELECT count(prediction) FROM silvan.predict_table('{name}', 'bench_{name}', 'id')", []),
        "predict(model, ARRAY[...]) in a select list": (
            f"SELECT count(silvan.predict('{name}', {array})) FROM bench_{name}", []),
        "predict(model, row) in a select list": (
            f"SELECT count(silvan.predict('{name}', r)) FROM bench_{name}_features AS r", []),
        "the same, filtered: WHERE predict(...) > 0.5": (
            f"SELECT count(*) FROM bench_{name} WHERE silvan.predict('{name}', {array}) > 0.5", []),
        "predict(model, ARRAY[...]), one row at a time": (
            f"SELECT count(silvan.predict('{name}', {array})) FROM bench_{name}", ["SET silvan.batch_calls = off"]),
    }
    parallel = {
        "predict_table, parallel workers": forms["predict_table"][0],
        "predict(model, ARRAY[...]) in a select list, parallel workers":
            forms["predict(model, ARRAY[...]) in a select list"][0],
    }
    updates = {
        "UPDATE t SET score = predict(model, ARRAY[...])":
            f"UPDATE bench_{name}_update SET score = silvan.predict('{name}', {array})",
        "UPDATE t SET score = 0.5 (the same UPDATE, a constant)": f"UPDATE bench_{name}_update SET score = 0.5",
    }
    # the row form's table: the features alone (a model without names reads a row by position);
    # the UPDATEs' table: the features and a score
    psql(f"DROP TABLE IF EXISTS bench_{name}_features, bench_{name}_update",
         f"CREATE TABLE bench_{name}_features AS SELECT {cols} FROM bench_{name}",
         f"VACUUM ANALYZE bench_{name}_features",
         f"CREATE TABLE bench_{name}_update AS SELECT id, {cols}, NULL::float8 AS score FROM bench_{name}",
         f"VACUUM ANALYZE bench_{name}_update")
    cells = [(f, th) for f in list(forms) + list(parallel) + list(updates) for th in THREADS]
    if worker is not None:
        cells += [("XGBoost inplace_predict, batches of 1024", th) for th in THREADS]
    series = {c: [] for c in cells}
    order = random.Random(len(name))
    for _ in range(REPEAT):
        round_cells = list(cells)
        order.shuffle(round_cells)
        for form, th in round_cells:
            if form.startswith("XGBoost"):
                v = worker.pass_us(1024, th)
            elif form in parallel:
                v = timed_ms(parallel[form], 2, parallel_setup(th))[1] * 1000.0 / n
            elif form in updates:
                warm = f"SELECT count(silvan.predict('{name}', {array})) FROM bench_{name} WHERE id < 1024"
                v = timed_ms(updates[form], 1, [f"VACUUM bench_{name}_update"] + one_backend(th) +
                             [warm, "BEGIN"])[0] * 1000.0 / n
            else:
                sql, setup = forms[form]
                v = timed_ms(sql, 2, one_backend(th) + setup)[1] * 1000.0 / n
            if v is not None:
                series[(form, th)].append(v)
    return {c: statistics.median(v) for c, v in series.items() if v}


def sql_forms_report(forms):
    """The SQL forms section of the report: per model, each form's µs per row
    and its ratio to predict_table's at the same thread count"""
    if not forms:
        return []
    md = ["## SQL forms", "",
          "The model scored from the SQL users write, over the bench table's rows (one `real` column per "
          "feature), beside `predict_table` and XGBoost's `inplace_predict` on the same rows; µs per row, "
          "medians of interleaved rounds, each a fresh session's second run. Threads: `silvan.max_threads` "
          "(XGBoost's nthread); \"parallel workers\": a parallel plan of that many workers, one thread each "
          "(the leader only gathers); the other forms run in one backend (`max_parallel_workers_per_gather = 0`). "
          "Ratio: over `predict_table` at the same thread count. "
          f"PostgreSQL's shared memory: {huge_pages_in_use()}.", ""]
    for name, (label, n, r) in forms.items():
        md += [f"### {label}, {n} rows", "", "| form | " + " | ".join(
            f"{th} thread{'s' if th > 1 else ''} | ratio" for th in THREADS) + " |",
            "|---|" + "---|---|" * len(THREADS)]
        names = list(dict.fromkeys(f for f, _ in r))
        for f in names:
            row = [f]
            for th in THREADS:
                v = r.get((f, th))
                base = r.get(("predict_table", th))
                row += [fmt_us(v) if v else "—", f"{v / base:.2f}" if v and base else "—"]
            md.append("| " + " | ".join(row) + " |")
        md.append("")
    return md

# ---- Models and their rows ----
#
# Every model is timed on n distinct rows, never a replay: a branch
# predictor learns rows it has seen and flatters branchy code.  A model
# with real inputs uses each of them once (duplicates dropped), then rows
# synthesized from its split thresholds; the models trained here get fresh
# draws of their training distribution.  Every draw has a fixed seed per
# model (model_seed), so a run's rows are the same whatever else it runs.

# Of a synthesized feature's values: the share exactly at one of its split
# thresholds (a split's boundary), and the share NaN (missing: the
# default branch)
EXACT_SHARE = 0.02
NAN_SHARE = 0.01


def model_seed(name):
    """The seed of a model's rows: fixed per model name"""
    return zlib.crc32(name.encode())


def draw_column(rng, n, thresholds=(), lo=None, hi=None, integers=False, categories=None):
    """n values of one feature, from what the model records of it: one of its
    categories (categories); one of the integers lo..hi where integers is
    true (one-hot, counts, hours); else a cell between two consecutive split
    thresholds (each cell equally likely, uniform inside it; the outer cells
    reach lo and hi, or 5% of the thresholds' span beyond them), so that
    rows take every branch; uniform in [lo, hi] for a feature no split
    reads.  Then a share EXACT_SHARE of a numeric feature's values is
    exactly one of its thresholds, and a share NAN_SHARE of any feature's
    values is NaN."""
    t = sorted(thresholds)
    if categories is not None:
        x = rng.choice(np.asarray(categories, dtype=np.float64), size=n)
    elif integers:
        x = rng.integers(int(lo), int(hi) + 1, size=n).astype(np.float64)
    elif not t:
        x = rng.uniform(lo if lo is not None else 0.0, hi if hi is not None else 0.0, size=n)
    else:
        pad = max(abs(t[-1] - t[0]), 1.0) * 0.05
        low = t[0] - pad if lo is None else min(lo, t[0] - pad)
        high = t[-1] + pad if hi is None else max(hi, t[-1] + pad)
        edges = np.array([low] + t + [high])
        cell = rng.integers(0, len(edges) - 1, size=n)
        u = rng.uniform(0.01, 0.99, size=n)
        x = edges[cell] + u * (edges[cell + 1] - edges[cell])
    if t and categories is None:
        exact = rng.random(n) < EXACT_SHARE
        x[exact] = rng.choice(np.asarray(t, dtype=np.float64), size=int(exact.sum()))
    x[rng.random(n) < NAN_SHARE] = np.nan
    return x


def synthesize_rows(features, n, rng):
    """n rows, a column per feature: features holds draw_column's keyword
    arguments for each"""
    return np.column_stack([draw_column(rng, n, **f) for f in features])


def row_keys(rows):
    """Each row's bytes as one value (np.unique compares them): rows with
    NaNs compare as equal where their bytes are, unlike their values"""
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def first_of_each(rows):
    """rows without repeats, each first occurrence kept in order (-0.0 made
    0.0 first: the two walk every tree alike)"""
    rows = np.where(rows == 0, 0.0, rows)
    _, first = np.unique(row_keys(rows), return_index=True)
    return rows[np.sort(first)]


def distinct_rows(name, n, draw, real=None):
    """n distinct float64 rows for a model and how many of them are real:
    its real rows (each used once) and then rows from draw(k, rng) (k more
    rows; drawn again, with the same rng, where a draw repeats a row),
    shuffled together; the rng's seed is the model's.  Exits where n
    distinct rows cannot be had."""
    rng = np.random.default_rng(model_seed(name))
    rows = first_of_each(real.astype(np.float64)) if real is not None else None
    real_count = 0 if rows is None else min(n, len(rows))
    for _ in range(20):
        if rows is not None and len(rows) >= n:
            break
        more = np.asarray(draw(n - (0 if rows is None else len(rows)) + 64, rng), dtype=np.float64)
        rows = first_of_each(more if rows is None else np.concatenate([rows, more]))
    if len(rows) < n:
        sys.exit(f"!!! {name}: only {len(rows)} distinct rows could be drawn, not {n}")
    return rows[:n][rng.permutation(n)], real_count


def check_distinct(name, rows):
    """Exit, loudly, where a model's rows repeat"""
    distinct = len(np.unique(row_keys(np.where(rows == 0, 0.0, rows))))
    if distinct != len(rows):
        sys.exit(f"!!! {name}: {len(rows) - distinct} of its {len(rows)} rows repeat; "
                 f"every model is timed on distinct rows")


def train_models(rng):
    """XGBoost models of our own: deep, wide, many trees, multi-class; the
    rows they are timed on are fresh draws of their training distribution."""
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
        # Trained once (minutes on 2 cores), then kept in the cache
        key = hashlib.sha256(repr((name, nf, params, rounds, classes, xgb.__version__)).encode()).hexdigest()[:16]
        path = os.path.join(CACHE, "trained", f"{name}-{key}.json")
        if not os.path.exists(path):
            say(f"(training {name})")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            booster = xgb.train({**params, "nthread": 2, "seed": 1}, xgb.DMatrix(X, label=y), rounds)
            booster.save_model(path + ".tmp.json")
            os.replace(path + ".tmp.json", path)

        def rows(n, name=name, nf=nf):
            """n distinct rows and where they came from"""
            made, _ = distinct_rows(name, n, lambda k, rng: rng.normal(size=(k, nf)).astype(np.float32))
            return made, "fresh draws of its training distribution"
        out.append((name, path, "xgboost", rows))
    return out


def xgboost_splits(path):
    """The number of features of an XGBoost JSON model and, per feature, the
    thresholds of its numeric splits (float32, as XGBoost compares them)."""
    learner = json.load(open(path))["learner"]
    thresholds = {}
    for tree in learner["gradient_booster"]["model"]["trees"]:
        kinds = tree.get("split_type") or [0] * len(tree["left_children"])
        for left, f, t, kind in zip(tree["left_children"], tree["split_indices"], tree["split_conditions"], kinds):
            if left != -1 and kind == 0:      # an inner node's numeric split (leaves: left_children -1)
                thresholds.setdefault(f, set()).add(float(np.float32(t)))
    return int(learner["learner_model_param"]["num_feature"]), {f: sorted(t) for f, t in thresholds.items()}


def xgboost_features(path, real):
    """draw_column's arguments for each feature of an XGBoost model: its
    split thresholds; the range of its real values (lo, hi), and whether
    they are a few integers."""
    nf, thresholds = xgboost_splits(path)
    features = []
    for j in range(nf):
        values = real[:, j][~np.isnan(real[:, j])] if real is not None and j < real.shape[1] else np.array([])
        f = {"thresholds": thresholds.get(j, [])}
        if len(values):
            f["lo"], f["hi"] = float(values.min()), float(values.max())
            f["integers"] = bool(np.all(values == np.round(values)) and f["hi"] - f["lo"] <= 64)
        features.append(f)
    return features


def synthesize_xgboost_rows(path, real):
    """draw(k, rng) for distinct_rows: k rows synthesized from an XGBoost
    model's split thresholds (draw_column), as float32, the type XGBoost
    reads"""
    features = xgboost_features(path, real)
    return lambda k, rng: synthesize_rows(features, k, rng).astype(np.float32)


def treebeard_models():
    """treebeard's XGBoost models: their real rows (each once), then rows
    synthesized from their split thresholds"""
    if not os.path.isdir(TB):
        say(f"(treebeard models not found at {TB}; skipping them)")
        return []
    out = []
    for name, stem, csv in [
        ("airline", "xgb_models--airline_xgb_model_save.json", "xgb_models--airline_xgb_model_save.json.test.sampled.csv"),
        ("higgs", "xgb_models--higgs_xgb_model_save.json", "xgb_models--higgs_xgb_model_save.json.test.sampled.csv"),
        ("year", "xgb_models--year_prediction_msd_xgb_model_save.json", "xgb_models--year_prediction_msd_xgb_model_save.json.csv"),
    ]:
        if ONLY and name not in ONLY:
            continue
        path = os.path.join(TB, stem)

        def rows(n, name=name, path=path, csv=csv):
            """n distinct rows and where they came from"""
            real = np.loadtxt(os.path.join(TB, csv), delimiter=",", dtype=np.float64)[:, :-1].astype(np.float32)
            made, k = distinct_rows(name, n, synthesize_xgboost_rows(path, real), real)
            return made, f"{k} of its real inputs, {n - k} synthesized from its split thresholds"
        out.append((name, path, "xgboost", rows))
    return out


def lightgbm_splits(path):
    """feature_infos and, per feature, the thresholds of its numeric splits."""
    infos, thresholds = None, {}
    features = decisions = None
    for line in open(path):
        if line.startswith("feature_infos="):
            infos = line.strip().split("=", 1)[1].split(" ")
        elif line.startswith("split_feature="):
            features = [int(v) for v in line.strip().split("=", 1)[1].split()]
        elif line.startswith("decision_type="):
            decisions = [int(v) for v in line.strip().split("=", 1)[1].split()]
        elif line.startswith("threshold=") and features is not None:
            values = line.strip().split("=", 1)[1].split()
            for f, d, t in zip(features, decisions or [0] * len(features), values):
                if not d & 1:          # numeric split (bit 0: categorical)
                    thresholds.setdefault(f, set()).add(float(t))
            features = decisions = None
    return infos, {f: sorted(t) for f, t in thresholds.items()}


def lightgbm_features(path):
    """draw_column's arguments for each feature of a LightGBM model, from
    what the model records: a categorical feature's categories
    (feature_infos); a numeric feature's range [lo:hi], which is a few
    integers where both ends are integers at most 64 apart; its split
    thresholds.  A feature with no values (none) is 0."""
    infos, thresholds = lightgbm_splits(path)
    features = []
    for j, info in enumerate(infos):
        if info == "none":
            features.append({"lo": 0.0, "hi": 0.0})
        elif not info.startswith("["):
            features.append({"categories": [int(c) for c in info.split(":") if int(c) >= 0]})
        else:
            lo, hi = (float(v) for v in info.strip("[]").split(":"))
            features.append({"thresholds": thresholds.get(j, []), "lo": lo, "hi": hi,
                             "integers": lo.is_integer() and hi.is_integer() and hi - lo <= 64})
    return features


def synthesize_lightgbm_rows(path):
    """draw(k, rng) for distinct_rows: k rows for a LightGBM model, which
    came without inputs, synthesized from its feature_infos and split
    thresholds (draw_column)"""
    features = lightgbm_features(path)
    return lambda k, rng: synthesize_rows(features, k, rng)


def lightgbm_models():
    """lleaves' LightGBM test models: rows synthesized from their split
    thresholds"""
    if not os.path.isdir(LL):
        say(f"(lleaves models not found at {LL}; skipping them)")
        return []
    out = []
    for name, stem in [
        ("nyc_taxi", "tests--models--NYC_taxi--model.txt"),
        ("mtpl2", "tests--models--mtpl2--model.txt"),
        ("lgbm_multiclass", "tests--models--multiclass--model.txt"),
        ("lgbm_airline", "tests--models--airline--model.txt"),
        ("boston", "tests--models--boston_housing--model.txt"),
    ]:
        if ONLY and name not in ONLY:
            continue
        path = os.path.join(LL, stem)

        def rows(n, name=name, path=path):
            """n distinct rows and where they came from"""
            made, _ = distinct_rows(name, n, synthesize_lightgbm_rows(path))
            return made, "synthesized from its split thresholds"
        out.append((name, path, "lightgbm", rows))
    return out


# ---- Engine workers ----

class Worker:
    """An engine in a process of its own, driven one line at a time."""

    def __init__(self, engine, argv, env=None):
        self.engine = engine
        self.log = os.path.join(WORK, f"{engine}.{os.getpid()}.{time.monotonic_ns()}.log")
        self.err = open(self.log, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, bufsize=1, env=env)
        self.info = {}
        self.error = None
        first = self.read()
        if first is None:
            self.fail("exited while loading")
        elif first.startswith("ready"):
            rest = first[5:].strip()
            self.info = json.loads(rest) if rest.startswith("{") else {"ready": rest}
        else:
            self.fail(first)

    def read(self):
        """The next answer line (anything else a library printed is skipped)"""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            if line.split(" ", 1)[0].strip() in ("ready", "error", "us", "ok", "compiled"):
                return line.strip()

    def fail(self, why):
        tail = ""
        try:
            self.err.flush()
            lines = [l for l in open(self.log).read().splitlines() if l.strip()]
            tail = " | ".join(lines[-3:])
        except OSError:
            pass
        self.error = why + (f" (stderr: {tail[-400:]})" if tail and why.startswith("exited") else "")
        self.close()

    def ask(self, command):
        """The answer line, or None (and the worker closed) on error or death."""
        if self.error:
            return None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.fail("exited")
            return None
        answer = self.read()
        if answer is None:
            self.fail(f"exited during '{command.split()[0]}'")
            return None
        if answer.startswith("error"):
            self.fail(answer)
            return None
        return answer

    def pass_us(self, batch, threads):
        a = self.ask(f"pass {batch} {threads}")
        return float(a.split()[1]) if a else None

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.err.close()


def start_worker(engine, model_path, fmt, rows_path, n, nf):
    if engine == "kernel":
        if not os.access(KERNEL, os.X_OK):
            return None, f"absent: no bench_kernel at {KERNEL}"
        w = Worker(engine, [KERNEL, "--serve", model_path, rows_path, str(n)])
        if not w.error:
            a = w.ask("compile 1024")
            if a:
                _, ms, same = a.split()
                w.info = {"compile_s": float(ms) / 1000.0, "cached": False, "same": same == "1"}
                if same != "1":
                    warn(f"{os.path.basename(model_path)}: silvan's compiled margins differ from its interpreter's")
    else:
        if not PEERS_PYTHONPATH:
            return None, "absent: peers not set up (SILVAN_BENCH_PEERS_PYTHONPATH unset)"
        env = dict(os.environ, PYTHONPATH=PEERS_PYTHONPATH, PYTHONWARNINGS="ignore")
        w = Worker(engine, ["/usr/bin/python3", os.path.join(HERE, "peer_worker.py"), engine, model_path, fmt,
                            rows_path, str(n), str(nf), CACHE], env)
    if w.error:
        return None, w.error
    return w, None


def compare(name, engine, ours, theirs):
    """Check an engine's outputs against silvan's predict_table; a line of text."""
    if theirs.shape != ours.shape:
        warn(f"MISMATCH {name}: {TITLES[engine]} gives outputs of shape {theirs.shape}, silvan {ours.shape}")
        return False
    diff = np.abs(theirs - ours)
    bad = diff > 1e-4 * (1 + np.abs(ours))
    worst = float(np.nanmax(diff)) if diff.size else 0.0
    nan = int(np.sum(np.isnan(theirs) != np.isnan(ours)))
    if bad.any() or nan:
        rows = int(np.sum(bad.any(axis=1))) + nan
        i = int(np.argmax(np.where(np.isnan(diff), np.inf, diff).max(axis=1)))
        warn(f"MISMATCH {name}: {TITLES[engine]} differs from silvan in {rows} of {len(ours)} rows "
             f"(max abs diff {worst:.3g}; row {i}: silvan {ours[i].tolist()}, {TITLES[engine]} {theirs[i].tolist()})")
        return False
    say(f"  {TITLES[engine]:<18} agrees with silvan: "
        + ("bitwise identical" if worst == 0 else f"max abs diff {worst:.3g}"))
    return True


# ---- Tuning (silvan.tune()) ----

def tune_call(name, batch, strategy, budget, min_speedup=None):
    """silvan.tune() of one model and batch size on its bench table, one
    thread: (tune()'s row as a dict, or None, the error, wall seconds)."""
    setup = one_backend(1)
    if min_speedup is not None:
        setup.append(f"SET silvan.tune_min_speedup = {min_speedup}")
    t = time.time()
    out, error = psql_run(*setup, f"SELECT row_to_json(t) FROM silvan.tune('{name}', 'bench_{name}', 'id', "
                                   f"batch_sizes => '{{{batch}}}', strategy => '{strategy}', "
                                   f"budget => '{budget}') t")
    wall = time.time() - t
    if error is not None:
        return None, error, wall
    rows = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return (rows[0] if rows else None), (None if rows else "tune() returned no row"), wall


def stored_schedule(name, batch):
    out = psql(f"SELECT schedule FROM silvan.schedules WHERE model = '{name}' AND batch_size = {batch}")
    return out.rstrip("\n") or None


def forget_schedule(name, batch):
    """Remove what is stored for the batch size (tune() left it or not)."""
    if stored_schedule(name, batch) is not None:
        psql(f"SELECT silvan.set_schedule('{name}', NULL, batch_size => {batch})")
    if stored_schedule(name, batch) is not None:
        warn(f"{name}: the schedule stored for batch {batch} could not be removed")


def spread(values):
    """Half the interquartile range of a series, relative to its median: the
    noise of this run on this machine."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / 2 / statistics.median(values)


def relative(t):
    """tune()'s best over its default, both timed in its confirming rounds
    (taking turns), so that what loads the machine weighs on both alike."""
    return t["us_per_row"] / t["default_us_per_row"] if t["default_us_per_row"] > 0 else 1.0


def heuristic_over_exhaustive(r):
    """The heuristic's best over the exhaustive's, each relative to the
    default timed beside it in its own search (the two searches run
    minutes apart, and a shared machine's load changes in between)."""
    return relative(r["heuristic"]) / relative(r["exhaustive"])


def one_line(schedule):
    return "; ".join(l.strip() for l in (schedule or "").splitlines() if l.strip())


def tune_section(models, meta, best):
    """For each model and batch size (one thread): tune() (heuristic) on the
    model's bench table, then the default and the tuned schedule end to end
    in interleaved rounds, as the main tables time silvan; beside the best
    of the fixed set of schedules.  On a few models the heuristic and the
    exhaustive search are compared by tune()'s own timing (both searches
    with silvan.tune_min_speedup = 0, so that each reports its best even
    where it is not 5% faster than the default).  Tuned schedules are
    removed after each batch size.  Returns the rows of the report's table."""
    names = [m[0] for m in models if m[0] in meta and (not TUNE_ONLY or m[0] in TUNE_ONLY)]
    if TUNE_EXHAUSTIVE == "none":
        exhaustive = []
    elif TUNE_EXHAUSTIVE:
        exhaustive = [m for m in TUNE_EXHAUSTIVE.split(",") if m in names]
    else:
        exhaustive = sorted(names, key=lambda m: meta[m][1]["silvan_first"])[:2]
    paths = {m[0]: m[1] for m in models}
    say(f"\n== Tuning: {', '.join(names)}; batches {TUNE_BATCHES}; 1 thread; heuristic budget {TUNE_BUDGET}; "
        f"exhaustive ({TUNE_EXHAUSTIVE_BUDGET}) on {', '.join(exhaustive) or 'none'}")
    rows = []
    load = os.getloadavg()[0]
    for name in names:
        n = meta[name][2]
        # The default runs as a second copy of the model, which has no
        # stored schedule, so that default and tuned take turns in every
        # round without the catalog changing in between
        twin = f"{name}__default"
        load_model(twin, paths[name])
        for batch in TUNE_BATCHES:
            forget_schedule(name, batch)
            row = {"model": name, "label": meta[name][0], "batch": batch}
            rows.append(row)
            h, error, wall = tune_call(name, batch, "heuristic", TUNE_BUDGET)
            if h is None:
                warn(f"{name}: silvan.tune() failed at batch {batch}: {error}")
                row["error"] = "tune() failed"
                forget_schedule(name, batch)
                continue
            row.update(tune=h, wall=wall)
            tuned = stored_schedule(name, batch) if h["stored"] else None
            if h["stored"] and tuned is None:
                warn(f"{name}: tune() says it stored a schedule for batch {batch}, but none is stored")
            cells = ["default"] + (["tuned"] if tuned else [])
            series = {c: [] for c in cells}
            order = random.Random(batch)
            started = time.time()
            for r in range(REPEAT):
                if r >= 3 and time.time() - started > 2 * REPEAT * ROUND_SECONDS:
                    NOTES.append(f"tuning {name}, batch {batch}: medians of {r} rounds, not {REPEAT} "
                                 f"(the rounds took {time.time() - started:.0f} s, over twice the budget)")
                    say("  (" + NOTES[-1] + ")")
                    break
                round_cells = list(cells)
                order.shuffle(round_cells)
                for c in round_cells:
                    series[c].append(silvan_once_us_per_row(twin if c == "default" else name, batch, n, 1,
                                                            table=f"bench_{name}"))
            row["default"] = statistics.median(series["default"])
            row["tuned"] = statistics.median(series["tuned"]) if tuned else None
            row["noise"] = max([TUNE_NOISE] + [spread(v) for v in series.values()])
            forget_schedule(name, batch)
            if WITH_BEST and batch in best and name in best[batch]:
                row["best"] = best[batch][name]
            else:
                row["best"] = min([row["default"]] + [silvan_us_per_row(name, batch, n, schedule=s)
                                                      for s in SCHEDULES])
            say(f"  {name} batch {batch:>5}: tune() {h['seconds']:.1f} s, {h['candidates']} candidates, "
                f"in memory {h['default_us_per_row']:.3f} -> {h['us_per_row']:.3f} µs/row "
                + ("(stored)" if tuned else "(default kept)")
                + f"; e2e default {row['default']:.3f}"
                + (f", tuned {row['tuned']:.3f} ({row['tuned'] / row['default']:.2f})" if tuned else "")
                + f", best fixed {row['best']:.3f}")
            if name in exhaustive:
                hh, error, _ = tune_call(name, batch, "heuristic", TUNE_BUDGET, min_speedup=0)
                forget_schedule(name, batch)
                ee, error2, _ = tune_call(name, batch, "exhaustive", TUNE_EXHAUSTIVE_BUDGET, min_speedup=0)
                forget_schedule(name, batch)
                if hh is None or ee is None:
                    warn(f"{name}: silvan.tune() failed at batch {batch} (heuristic against exhaustive): "
                         f"{error or error2}")
                    continue
                row.update(heuristic=hh, exhaustive=ee)
                say(f"  {name} batch {batch:>5}: heuristic {hh['us_per_row']:.3f} µs/row (its default "
                    f"{hh['default_us_per_row']:.3f}) in {hh['seconds']:.1f} s ({hh['candidates']} candidates), "
                    f"exhaustive {ee['us_per_row']:.3f} µs/row (its default {ee['default_us_per_row']:.3f}) in "
                    f"{ee['seconds']:.1f} s ({ee['candidates']} candidates)")
        psql(f"SELECT silvan.drop_model('{twin}')")
    NOTES.append(f"tuning: load average {load:.1f} when it began, {os.getloadavg()[0]:.1f} when it ended "
                 f"({os.cpu_count()} cores)")
    return rows


def tune_report(rows):
    """The report's Tuning section: markdown lines."""
    if not rows:
        return []
    md = ["## Tuning", "",
          f"silvan.tune() (heuristic, budget {TUNE_BUDGET}, silvan.max_threads = 1) on each model's bench table, "
          "one batch size at a time; then predict_table end to end, 1 thread, with the default schedule and "
          f"with the tuned one stored, in {REPEAT} interleaved rounds (medians, µs per row, the rows of the "
          "tables above). \"default kept\": tune() found nothing silvan.tune_min_speedup (1.05) times faster "
          "than the default in its own timing (in memory), so nothing was stored and the default is what "
          "runs. Best fixed: the best of the small fixed set of schedules (and the default), end to end. "
          "Heuristic / exhaustive (some models): both searches run again with silvan.tune_min_speedup = 0, "
          f"the exhaustive one with a budget of {TUNE_EXHAUSTIVE_BUDGET}: the ratio of the best each found, "
          "in tune()'s own timing, each taken relative to the default that tune() timed in turns with it (the "
          "searches run minutes apart, and the load of a shared machine changes in between; in brackets: "
          "best of default, µs per row, heuristic / exhaustive), and the ratio of their search times. "
          "Tuned schedules are removed afterwards.",
          "",
          "| model | batch | default e2e | tuned e2e | tuned / default | best fixed e2e | tune() in memory, "
          "default → best | heuristic search | candidates | heuristic best / exhaustive best "
          "| heuristic s / exhaustive s |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        label = r["label"]
        if "error" in r:
            md.append(f"| {label} | {r['batch']} | {r['error']} |" + " — |" * 8)
            continue
        h = r["tune"]
        ratio = f"{r['tuned'] / r['default']:.2f} (noise ±{r['noise']:.0%})" if r["tuned"] else "—"
        ex = r.get("exhaustive")
        if ex:
            hh = r["heuristic"]
            q = (f"{heuristic_over_exhaustive(r):.3f} ({hh['us_per_row']:.3f} of {hh['default_us_per_row']:.3f} / "
                 f"{ex['us_per_row']:.3f} of {ex['default_us_per_row']:.3f})")
            t = (f"{hh['seconds'] / ex['seconds']:.3f} ({hh['seconds']:.1f} s / {ex['seconds']:.1f} s, "
                 f"{ex['candidates']} candidates)")
        else:
            q = t = "—"
        md.append(f"| {label} | {r['batch']} | {fmt_us(r['default'])} | "
                  + (fmt_us(r["tuned"]) if r["tuned"] else "default kept")
                  + f" | {ratio} | {fmt_us(r['best'])} | {h['default_us_per_row']:.3f} → {h['us_per_row']:.3f} "
                  f"| {h['seconds']:.1f} s | {h['candidates']} | {q} | {t} |")
    stored = [r for r in rows if r.get("tuned")]
    if stored:
        md += ["", "Tuned schedules:", ""]
        md += [f"- {r['model']}, batch {r['batch']}: `{one_line(r['tune']['schedule'])}`" for r in stored]
    md.append("")
    return md


def tune_bars(rows):
    """PASS/FAIL lines of the tuning bars, for the notes."""
    done = [r for r in rows if "error" not in r]
    failed = [f"{r['model']} batch {r['batch']}" for r in rows if "error" in r]
    out = [f"FAIL: silvan.tune() failed on {', '.join(failed)}"] if failed else []
    if not done:
        return out
    slow = [f"{r['model']} batch {r['batch']} ({r['tuned'] / r['default']:.2f}, noise ±{r['noise']:.0%})"
            for r in done if r["tuned"] and r["tuned"] > r["default"] * (1 + r["noise"])]
    kept = sum(1 for r in done if not r["tuned"])
    out.append(f"{'FAIL' if slow else 'PASS'}: tuned end to end no slower than the default on every model and batch "
               f"(within the noise: half the interquartile range of the rounds, relative, at least "
               f"{TUNE_NOISE:.0%}; {len(done) - kept} tuned, {kept} default kept)"
               + (": slower on " + ", ".join(slow) if slow else ""))
    noisy = [f"{r['model']} batch {r['batch']} (±{r['noise']:.0%})" for r in done if r["noise"] > 0.1]
    if noisy:
        out.append("the machine was busy: the end-to-end rounds of the tuning section varied by over 10% on "
                   + ", ".join(noisy) + "; tune()'s own timings vary alike, so these bars are weak evidence")
    ex = [r for r in done if r.get("exhaustive")]
    if ex:
        worse = [f"{r['model']} batch {r['batch']} ({heuristic_over_exhaustive(r):.3f})"
                 for r in ex if heuristic_over_exhaustive(r) > TUNE_BAR_QUALITY]
        out.append(f"{'FAIL' if worse else 'PASS'}: heuristic best within {TUNE_BAR_QUALITY - 1:.0%} of the "
                   f"exhaustive best ({len(ex)} model and batch size{'s' if len(ex) > 1 else ''})"
                   + (": not on " + ", ".join(worse) if worse else ""))
        long = [f"{r['model']} batch {r['batch']} ({r['heuristic']['seconds'] / r['exhaustive']['seconds']:.3f})"
                for r in ex if r["heuristic"]["seconds"] > TUNE_BAR_TIME * r["exhaustive"]["seconds"]]
        out.append(f"{'FAIL' if long else 'PASS'}: heuristic search in at most 1/{1 / TUNE_BAR_TIME:.0f} of the "
                   f"exhaustive search's time" + (": not on " + ", ".join(long) if long else ""))
        spent = [f"{r['model']} batch {r['batch']}" for r in ex
                 if r["exhaustive"]["seconds"] >= 0.98 * interval_seconds(TUNE_EXHAUSTIVE_BUDGET)]
        if spent:
            out.append("the exhaustive search ran out of its budget (so did not see the whole space) on "
                       + ", ".join(spent))
    else:
        out.append("heuristic against exhaustive: not run (SILVAN_BENCH_TUNE_EXHAUSTIVE)")
    over = [f"{r['model']} batch {r['batch']} ({r['wall']:.0f} s)" for r in done if r["wall"] >= TUNE_BAR_SECONDS]
    out.append(f"{'FAIL' if over else 'PASS'}: one model and batch size tuned (heuristic, the tune() call "
               f"from SQL) in under {TUNE_BAR_SECONDS:.0f} s on this {os.cpu_count()}-core machine (longest: "
               f"{max(r['wall'] for r in done):.1f} s)" + (": not " + ", ".join(over) if over else ""))
    return out


def interval_seconds(text):
    return float(psql(f"SELECT extract(epoch FROM interval '{text}')").strip())


# ---- The run ----

def fmt_us(v):
    return "—" if v is None else f"{v:.3f}"


def fmt_s(s):
    if s is None:
        return "—"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.1f} s"


def geo(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main():
    t_start = time.time()
    psql("CREATE EXTENSION IF NOT EXISTS silvan")
    # the host profile is measured once, here, not inside a timed first predict()
    psql("SELECT count(*) FROM silvan.host_profile")
    models = [m for m in treebeard_models() + train_models(np.random.default_rng(7)) + lightgbm_models()
              if not ONLY or m[0] in ONLY]
    if ROWS < MIN_ROWS:
        NOTES.append(f"SILVAN_BENCH_ROWS = {ROWS}: fewer than the {MIN_ROWS} distinct rows a model is "
                     "benchmarked on")
    say(f"{ROWS} distinct rows per model; batches {BATCHES}; threads {list(THREADS)}; "
        f"medians of {REPEAT} interleaved rounds; engines: silvan e2e, "
        + ", ".join(TITLES[e] for e in ENGINES if e in CHOSEN))
    results = {}     # (batch, threads) -> model -> engine -> µs per row
    best = {}        # batch -> model -> µs per row
    meta = {}        # model -> (label, compile info)
    status = {}      # model -> engine -> text when it has no figures
    mismatched = {}  # model -> set of engines
    forms = {}       # model -> (label, rows, SQL forms' figures)
    sources = {}     # model -> where its rows came from
    for name, model_path, fmt, model_rows in models:
        # The wide model gets as many rows as the others, though its table is
        # large: 500 reals a row, three rows a page, about 270 MB at 100,000
        # rows (run.sh's shared buffers hold four times that, so the scan
        # reads it from PostgreSQL's cache, as the peers' rows are in memory)
        n = ROWS
        rows, sources[name] = model_rows(n)
        check_distinct(name, rows)
        sqltype = "real" if fmt == "xgboost" else "double precision"
        trees, depth, nf, task = load_model(name, model_path)
        make_table(name, rows, sqltype, columns=feature_columns(name, nf))
        multi = task == "multiclass"
        label = f"{name} ({trees}, {depth}, {nf})"
        say(f"\n== {label}: {fmt}, {task}, {n} distinct rows: {sources[name]} "
            f"({(time.time() - t_start) / 60:.1f} min into the run)")
        one = "'{" + ",".join(repr(float(v)) for v in rows[0]) + "}'::" + ("real[]" if fmt == "xgboost" else "float8[]")
        first = statistics.median(timed_ms(f"SELECT silvan.predict('{name}', {one})")[0] for _ in range(3)) / 1000.0
        rows_path = os.path.join(WORK, f"{name}.f64")
        rows.tofile(rows_path)
        ours = silvan_outputs(name, multi, n)
        workers, status[name], mismatched[name] = {}, {}, set()
        compile_info = {"silvan_first": first}
        for e in ENGINES:
            if fmt not in FORMATS[e]:
                status[name][e] = "n/a"
                continue
            if e not in CHOSEN:
                status[name][e] = "skipped"
                continue
            t = time.time()
            w, why = start_worker(e, model_path, fmt, rows_path, n, nf)
            if w is None:
                status[name][e] = "absent" if why.startswith("absent") else "failed"
                (say if why.startswith("absent") else warn)(f"{name}: {TITLES[e]} {why}")
                continue
            compile_info[e] = (w.info.get("compile_s"), w.info.get("cached"))
            out_path = os.path.join(WORK, f"{name}.{e}.out")
            if not w.ask(f"predict 1024 {out_path}"):
                warn(f"{name}: {TITLES[e]} failed to predict: {w.error}")
                status[name][e] = "failed"
                continue
            theirs = np.fromfile(out_path, dtype=np.float64).reshape(n, -1)
            if not compare(name, e, ours, theirs):
                mismatched[name].add(e)
            workers[e] = w
            if time.time() - t > 5:
                say(f"  ({TITLES[e]} ready in {time.time() - t:.0f} s)")
        # What a round costs: each engine once at the first batch size with
        # 1 and 2 threads (which warms it), silvan twice a timing (its
        # session's warm-up run)
        cost = sum(2 * silvan_once_us_per_row(name, BATCHES[0], n, th) for th in THREADS)
        for e, w in list(workers.items()):
            for th in THREADS:
                v = w.pass_us(BATCHES[0], th)
                if v is None:
                    warn(f"{name}: {TITLES[e]} failed: {w.error}")
                    status[name][e] = "failed"
                    del workers[e]
                    break
                cost += v
        if cost * n / 1e6 > ROUND_SECONDS and n > MIN_ROWS:
            n = max(MIN_ROWS, int(ROUND_SECONDS * 1e6 / cost) // 1000 * 1000)
            say(f"  a round would take {cost * len(rows) / 1e6:.1f} s on {len(rows)} rows: timing the first {n}")
            psql(f"DELETE FROM bench_{name} WHERE id >= {n}", f"VACUUM ANALYZE bench_{name}")
            for e, w in workers.items():
                w.ask(f"rows {n}")
        meta[name] = (label, compile_info, n)
        before = core_latency_ns()
        for batch in BATCHES:
            cells = [("e2e", th) for th in THREADS] + [(e, th) for e in workers for th in THREADS]
            series = {c: [] for c in cells}
            order = random.Random(batch)
            started = time.time()
            for r in range(REPEAT):
                # A burst of load can make a round take many times what was
                # estimated (OpenMP's 2-thread passes on a busy core): past
                # twice the budget, stop after 3 rounds and say so
                if r >= 3 and time.time() - started > 2 * REPEAT * ROUND_SECONDS:
                    NOTES.append(f"{name}, batch {batch}: medians of {r} rounds, not {REPEAT} "
                                 f"(the rounds took {time.time() - started:.0f} s, over twice the budget)")
                    say("  (" + NOTES[-1] + ")")
                    break
                round_cells = list(cells)
                order.shuffle(round_cells)
                for e, th in round_cells:
                    settle()
                    if e == "e2e":
                        v = silvan_once_us_per_row(name, batch, n, th)
                    elif workers[e].error:
                        continue
                    else:
                        v = workers[e].pass_us(batch, th)
                        if v is None:
                            warn(f"{name}: {TITLES[e]} failed at batch {batch}: {workers[e].error}")
                            status[name][e] = "failed"
                            continue
                    series[(e, th)].append(v)
            for (e, th), s in series.items():
                if s:
                    results.setdefault((batch, th), {}).setdefault(name, {})[e] = statistics.median(s)
            if WITH_BEST:
                e2e1 = results[(batch, 1)][name]["e2e"]
                best.setdefault(batch, {})[name] = min([e2e1] + [silvan_us_per_row(name, batch, n, schedule=s)
                                                                 for s in SCHEDULES])
            line = []
            for th in THREADS:
                r = results[(batch, th)][name]
                line.append(f"{th}t: " + " ".join(f"{TITLES[e].replace('silvan ', '')}={r[e]:.3f}"
                                                   for e in ["e2e"] + ENGINES if e in r))
            say(f"  batch {batch:>5}  " + " | ".join(line)
                + (f" | best schedule 1t={best[batch][name]:.3f}" if WITH_BEST else ""))
        LATENCY[name] = (before, core_latency_ns())
        if all(v is not None for v in LATENCY[name]):
            say(f"  cross-core round trip: {LATENCY[name][0]:.0f} ns before the rounds, "
                f"{LATENCY[name][1]:.0f} after")
        if WITH_FORMS and name in FORMS_MODELS and fmt == "xgboost" and rows.shape[1] <= 200:
            say(f"  SQL forms ({REPEAT} rounds)")
            forms[name] = (label, n, sql_forms(name, n, feature_columns(name, nf), workers.get("xgboost")))
            for (f, th), v in forms[name][2].items():
                say(f"    {f}, {th}: {v:.3f}")
        for w in workers.values():
            w.close()
    tune_rows = tune_section(models, meta, best) if WITH_TUNE else []
    extras = []
    wide = next((m for m in models if m[0] == "wide"), None)
    if wide and "wide" in meta:
        n = meta["wide"][2]       # the rows the wide model was timed on
        make_table("wide_toast", wide[3](ROWS)[0][:n], "real", storage="EXTENDED")
        load_model("wide_toast", wide[1])
        extras.append(f"wide with the array out of line (STORAGE EXTENDED, PostgreSQL's default), batch 1024, "
                      f"1 thread: {silvan_us_per_row('wide_toast', 1024, n):.3f} µs per row")
    many = next((m for m in models if m[0] == "many"), None)
    if many:
        ms = [timed_ms("SELECT silvan.explain('many', 4096) IS NOT NULL")[0] for _ in range(3)]
        extras.append(f"silvan compile (explain, fresh session) of the 1000-tree model: {statistics.median(ms):.1f} ms")
    report(models, results, best, meta, status, mismatched, extras, tune_rows, time.time() - t_start, forms,
           sources)


def cell(name, e, r, status, mismatched):
    if e in r:
        return fmt_us(r[e]) + (" (mismatch!)" if e in mismatched.get(name, ()) else "")
    return status.get(name, {}).get(e, "—")


def huge_pages_in_use():
    """How much of the kernel's huge pages are taken (PostgreSQL's shared
    memory, when the server got them): parallel workers are fresh processes
    that map the shared buffers they read, and on a VM 4 kB pages make that
    cost as much as the work"""
    info = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                info[key] = value.split()[0] if value.split() else "0"
    except OSError:
        return "huge pages unknown"
    used = (int(info.get("HugePages_Total", 0)) - int(info.get("HugePages_Free", 0)) +
            int(info.get("HugePages_Rsvd", 0))) * int(info.get("Hugepagesize", 0)) // 1024
    return f"{used} MB in huge pages" if used else "4 kB pages (no huge pages reserved)"


def llvm_host_cpu(names):
    """LLVM's name for the host CPU (sys::getHostCPUName, silvan's
    JitHostCpuName) and where it was read.  silvan has no SQL function that
    returns it alone; its code carries it as the target-cpu attribute, which
    silvan.explain(..., llvm_ir => true) shows for code compiled in that
    session (the code cache off, so that the model is compiled there and its
    IR kept): of the smallest of the run's models (names).  Failing that,
    the Host CPU line of llc --version (the same LLVM 14, which prints
    "(unknown)" where the name is "generic")."""
    if names:
        smallest = psql("SELECT name FROM silvan.models WHERE name IN ("
                        + ", ".join(f"'{n}'" for n in names) + ") ORDER BY num_trees, name LIMIT 1",
                        check=False)
        if smallest and smallest.strip():
            out = psql("SET silvan.code_cache = off",
                       f"SELECT silvan.explain('{smallest.strip()}', 64, llvm_ir => true)", check=False)
            found = re.search(r'"target-cpu"="([^"]*)"', out or "")
            if found:
                return found.group(1), "silvan.explain's LLVM IR, target-cpu"
    try:
        out = subprocess.run(["/usr/lib/llvm-14/bin/llc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown", "neither silvan.explain nor llc said"
    found = re.search(r"Host CPU:\s*(\S+)", out)
    if not found:
        return "unknown", "neither silvan.explain nor llc said"
    name = found.group(1)
    return ("generic" if name == "(unknown)" else name), "llc --version, Host CPU"


def cpu_description(names):
    """The CPU: vendor, model name, family, model and stepping as
    /proc/cpuinfo gives them, AVX-512 or not, and LLVM's name for it (what
    silvan compiles for: llvm_host_cpu)"""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    key, value = (part.strip() for part in line.split(":", 1))
                    info.setdefault(key, value)
                if not line.strip() and info:
                    break
    except OSError:
        pass
    avx512 = "AVX-512" if "avx512f" in info.get("flags", "").split() else "no AVX-512"
    llvm, source = llvm_host_cpu(names)
    return (f"{info.get('vendor_id', 'unknown vendor')} {info.get('model name', 'unknown CPU')} "
            f"(family {info.get('cpu family', '?')}, model {info.get('model', '?')}, "
            f"stepping {info.get('stepping', '?')}, {avx512}; LLVM's host CPU: {llvm}, from {source})")


def host_profile():
    """silvan's host profile on this machine (the silvan.host_profile view):
    each choice that depends on the CPU, the alternative taken and how"""
    out = psql("SELECT string_agg(format('%s %s (%s)', choice, value, how), ', ') "
               "FROM silvan.host_profile WHERE choice NOT IN ('cpu', 'profile')", check=False)
    return out.strip() if out and out.strip() else "unknown"


def report(models, results, best, meta, status, mismatched, extras, tune_rows, seconds, forms, sources):
    md = ["# make bench: silvan and the peer compilers", "",
          f"{time.strftime('%Y-%m-%d %H:%M')}; CPU: {cpu_description(list(meta))}, {os.cpu_count()} cores; "
          f"silvan's host profile: {host_profile()}.", "",
          f"Every model is timed on n distinct rows (the rows column: {ROWS} made per model, at least "
          f"{min(ROWS, MIN_ROWS)} timed), never a replay: its real inputs, each used once, then rows "
          "synthesized from its split thresholds "
          f"(uniform between them, {EXACT_SHARE:.0%} of a feature's values exactly at a threshold, "
          f"{NAN_SHARE:.0%} NaN); the models trained here: fresh draws of their training distribution. "
          "Rows: " + "; ".join(f"{m}: {sources[m]}" for m in meta) + ".", "",
          f"Medians of {REPEAT} interleaved rounds; µs per row (lower is better). "
          "Ratios are silvan's time over the fastest peer's in the same run and thread count "
          "(below 1: silvan is faster). silvan e2e: predict_table from SQL; silvan kernel: the compiled "
          "forest on an in-memory array. n/a: the engine does not take this model's format; "
          "skipped: left out by SILVAN_BENCH_PEERS; absent/failed: see the notes.", ""]
    names = [m[0] for m in models]
    peer_cols = [e for e in PEERS]
    for batch in BATCHES:
        for th in THREADS:
            table = results.get((batch, th), {})
            if not table:
                continue
            md += [f"## batch {batch}, {th} thread{'s' if th > 1 else ''}", ""]
            head = ["model (trees, max depth, features)", "rows", "silvan e2e", "silvan kernel"] + \
                   [TITLES[e] for e in peer_cols] + ["silvan e2e / best peer", "silvan kernel / best peer"]
            with_best = WITH_BEST and th == 1 and batch in best
            if with_best:
                head.append("silvan e2e, best schedule")
            md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            ratios_e2e, ratios_k = [], []
            for name in names:
                if name not in table:
                    continue
                r = table[name]
                peers = [r[e] for e in peer_cols if e in r]
                bp = min(peers) if peers else None
                re2e = r["e2e"] / bp if bp else None
                rk = r["kernel"] / bp if bp and "kernel" in r else None
                ratios_e2e.append(re2e)
                ratios_k.append(rk)
                row = [meta[name][0], str(meta[name][2]), fmt_us(r.get("e2e")),
                       cell(name, "kernel", r, status, mismatched)] + \
                      [cell(name, e, r, status, mismatched) for e in peer_cols] + \
                      [f"{re2e:.2f}" if re2e else "—", f"{rk:.2f}" if rk else "—"]
                if with_best:
                    row.append(fmt_us(best[batch].get(name)))
                md.append("| " + " | ".join(row) + " |")
            g1, g2 = geo(ratios_e2e), geo(ratios_k)
            parts = ([f"e2e {g1:.2f}"] if g1 else []) + ([f"kernel {g2:.2f}"] if g2 else [])
            if parts:
                md += ["", "Geometric mean over these models, silvan / best peer: " + ", ".join(parts)]
            latencies = latency_text([n for n in names if n in table])
            if th > 1 and latencies:
                md += ["", "Cross-core round trip (bench_kernel --core-latency), ns, before and after each "
                       "model's rounds: " + latencies + "."]
            md.append("")
    md += ["## Compile times", "",
           "silvan: first predict() in a fresh backend of a server that preloads silvan (the median of "
           "three sessions: the first compiles, the next two load the code cache's machine code; one row) "
           "and the compile alone at "
           "batch 1024 (bench_kernel); lleaves: compile(); TL2cgen: load the model and export_lib (gcc, "
           "parallel_comp = cores); Hummingbird: convert(). Peer artifacts are cached by "
           f"model hash under {CACHE}; \"cached\" marks the time measured when the artifact was built.", "",
           "| model (trees, max depth, features) | silvan first predict | silvan compile | lleaves | TL2cgen "
           "| HB tree_trav | HB perf_tree_trav |", "|---|---|---|---|---|---|---|"]
    for name in names:
        if name not in meta:
            continue
        label, ci, _ = meta[name]

        def c(e):
            if e not in ci:
                return status.get(name, {}).get(e, "—")
            s, cached = ci[e]
            return fmt_s(s) + (" (cached)" if cached else "")
        md.append(f"| {label} | {fmt_s(ci['silvan_first'])} | {c('kernel')} | {c('lleaves')} | {c('tl2cgen')} "
                  f"| {c('hb_tree_trav')} | {c('hb_perf_tree_trav')} |")
    md.append("")
    md += sql_forms_report(forms)
    md += tune_report(tune_rows)
    if extras:
        md += ["## Other figures", ""] + [f"- {x}" for x in extras] + [""]
    md += ["## Notes", ""]
    md += [f"- **{w}**" if w.startswith("MISMATCH") else f"- {w}" for w in WARNINGS] or \
          ["- every engine agreed with silvan's predict_table on every row (tolerance 1e-4 relative)"]
    md += [f"- {x}" for x in NOTES]
    md += [f"- {x}" for x in tune_bars(tune_rows)]
    md += ["", f"Whole run: {seconds / 60:.1f} minutes.", ""]
    text = "\n".join(md)
    say("\n" + text)
    with open(OUT, "w") as f:
        f.write(text)
    say(f"(written to {OUT})")


if __name__ == "__main__":
    main()
