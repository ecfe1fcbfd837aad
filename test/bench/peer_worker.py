#!/usr/bin/python3
"""One peer engine of make bench, as a worker process that bench.py drives.

    peer_worker.py PEER MODEL FORMAT ROWS_F64 NUM_ROWS NUM_FEATURES CACHE_DIR

PEER: xgboost, lleaves, tl2cgen, hb_tree_trav or hb_perf_tree_trav;
FORMAT: xgboost or lightgbm.  ROWS_F64 holds NUM_ROWS rows of NUM_FEATURES
doubles, row-major (for an XGBoost model, values a float holds exactly:
XGBoost's own engines get them as float32, LightGBM's as float64, as the
training libraries read them).  Each engine runs in its own process so
that a crash of one (LLVM aborts, OpenMP runtimes) costs that engine only
and the libraries never share a process.

The worker loads the model (compiling it, or loading the compiled artifact
from CACHE_DIR, keyed by the model file's sha256: re-runs do not
recompile or convert again), then prints one line, "ready JSON" (compile_s: seconds the
compile took when the artifact was built; cached: whether it came from the
cache; version) or "error TEXT", and answers one line per command:

  pass BATCH THREADS     score every row once, in chunks of BATCH rows, with
                         THREADS threads: "us MICROSECONDS_PER_ROW"
  predict BATCH PATH     the same with one thread, writing the outputs to PATH
                         (rows x width doubles: the library's predict():
                         the value, the positive-class probability, or the
                         class probabilities of a multi-class model): "ok"
  rows N                 use the first N rows from now on: "ok"
  quit

Inputs are prepared once, outside the timed passes, in each engine's own
form (numpy arrays; TL2cgen DMatrix objects per chunk); a pass calls the
engine's predict once per chunk and keeps its outputs, as inplace_predict
is timed.
"""
import hashlib
import json
import os
import pickle
import sys
import time
import traceback

import numpy as np


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cached_build(cache_dir, key, artifact_name, build):
    """The artifact cache_dir/key/artifact_name, built by build(path) if
    missing; returns (path, compile seconds when it was built, cached)."""
    d = os.path.join(cache_dir, key)
    path = os.path.join(d, artifact_name)
    meta = os.path.join(d, "compile.json")
    if os.path.exists(path) and os.path.exists(meta):
        with open(meta) as f:
            return path, json.load(f)["compile_s"], True
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    seconds = build(tmp)
    os.replace(tmp, path)
    with open(meta + ".tmp", "w") as f:
        json.dump({"compile_s": seconds, "built": time.strftime("%Y-%m-%d %H:%M:%S")}, f)
    os.replace(meta + ".tmp", meta)
    return path, seconds, False


class Engine:
    version = ""
    compile_s = None
    cached = False

    def chunks(self, batch):
        return [(s, min(s + batch, self.n)) for s in range(0, self.n, batch)]

    def prepare(self, batch, threads):
        """What a pass needs that is no part of its timing (thread settings, inputs)."""

    def run(self, batch, threads):
        """One pass over the first n rows; returns the outputs, a list of arrays."""
        raise NotImplementedError


class XGBoostEngine(Engine):
    def __init__(self, model, fmt, rows, cache_dir):
        import xgboost as xgb
        if fmt != "xgboost":
            raise RuntimeError("XGBoost reads XGBoost models only")
        self.version = xgb.__version__
        self.X = rows.astype(np.float32)
        self.n = len(rows)
        self.booster = xgb.Booster(model_file=model)
        self.threads = None

    def prepare(self, batch, threads):
        if threads != self.threads:
            self.booster.set_param({"nthread": threads})
            self.threads = threads

    def run(self, batch, threads):
        return [self.booster.inplace_predict(self.X[s:e]) for s, e in self.chunks(batch)]


class LleavesEngine(Engine):
    def __init__(self, model, fmt, rows, cache_dir):
        import lleaves
        if fmt != "lightgbm":
            raise RuntimeError("lleaves reads LightGBM models only")
        self.version = "lleaves (peers tree)"
        # lleaves refuses files without LightGBM's trailing lines: give it a copy with them
        text = open(model).read()
        tail = ""
        if "end of trees" not in text:
            tail += "\nend of trees\n"
        if "pandas_categorical:" not in text:
            tail += "\npandas_categorical:null\n"
        key = "lleaves-" + sha256(model)[:24]
        src = model
        if tail:
            os.makedirs(os.path.join(cache_dir, key), exist_ok=True)
            src = os.path.join(cache_dir, key, "model.txt")
            with open(src, "w") as f:
                f.write(text + tail)
        self.model = lleaves.Model(model_file=src)

        def build(path):
            t = time.perf_counter()
            lleaves.Model(model_file=src).compile(cache=path)
            return time.perf_counter() - t

        obj, self.compile_s, self.cached = cached_build(cache_dir, key, "model.o", build)
        self.model.compile(cache=obj)
        self.X = np.ascontiguousarray(rows, dtype=np.float64)
        self.n = len(rows)

    def run(self, batch, threads):
        return [self.model.predict(self.X[s:e], n_jobs=threads) for s, e in self.chunks(batch)]


class TL2cgenEngine(Engine):
    def __init__(self, model, fmt, rows, cache_dir):
        import tl2cgen
        import treelite
        self.tl2cgen = tl2cgen
        self.version = f"TL2cgen {tl2cgen.__version__}, Treelite {treelite.__version__}"
        key = "tl2cgen-" + sha256(model)[:24]

        def build(path):
            t = time.perf_counter()
            if fmt == "xgboost":
                tm = treelite.frontend.load_xgboost_model(model)
            else:
                tm = treelite.frontend.load_lightgbm_model(model)
            tl2cgen.export_lib(tm, toolchain="gcc", libpath=path + ".so",
                               params={"parallel_comp": os.cpu_count() or 2})
            os.replace(path + ".so", path)
            return time.perf_counter() - t

        lib, self.compile_s, self.cached = cached_build(cache_dir, key, "predictor.so", build)
        self.predictors = {}
        self.lib = lib
        # LightGBM compares in double: float32 inputs would cross thresholds
        self.X = rows.astype(np.float32 if fmt == "xgboost" else np.float64)
        self.n = len(rows)
        self.dmats = {}

    def prepare(self, batch, threads):
        if threads not in self.predictors:
            self.predictors[threads] = self.tl2cgen.Predictor(self.lib, nthread=threads)
        if (batch, self.n) not in self.dmats:
            self.dmats = {(batch, self.n): [self.tl2cgen.DMatrix(self.X[s:e]) for s, e in self.chunks(batch)]}

    def run(self, batch, threads):
        p = self.predictors[threads]
        return [p.predict(d) for d in self.dmats[(batch, self.n)]]


class HummingbirdEngine(Engine):
    def __init__(self, model, fmt, rows, cache_dir, implementation):
        import torch
        import xgboost as xgb
        import hummingbird
        import hummingbird.ml
        if fmt != "xgboost":
            raise RuntimeError("Hummingbird converts LightGBM models only from lightgbm objects (not installed)")
        self.torch = torch
        self.version = f"Hummingbird {hummingbird.__version__}, torch {torch.__version__}"
        booster = xgb.Booster(model_file=model)
        config = json.loads(booster.save_config())
        objective = config["learner"]["objective"]["name"]
        self.classifier = objective.startswith("binary:") or objective.startswith("multi:")
        if self.classifier:
            est = xgb.XGBClassifier()
            est.load_model(model)
            # XGBoost 1.7 leaves n_classes_ unset for JSON saved by XGBoost < 1.6
            classes = int(config["learner"]["learner_model_param"].get("num_class", "0"))
            est.n_classes_ = classes if classes > 1 else 2
        else:
            est = xgb.XGBRegressor()
            est.load_model(model)
        self.X = rows.astype(np.float32)
        self.n = len(rows)
        self.binary = self.classifier and est.n_classes_ == 2
        key = f"hb-{implementation}-" + sha256(model)[:24]

        def build(path):
            t = time.perf_counter()
            converted = hummingbird.ml.convert(est, "torch", self.X[:1],
                                               extra_config={"tree_implementation": implementation})
            seconds = time.perf_counter() - t
            with open(path, "wb") as f:
                pickle.dump(converted, f)
            return seconds

        # The converted model, pickled (Hummingbird's own save does the same, zipped)
        path, self.compile_s, self.cached = cached_build(cache_dir, key, "model.pkl", build)
        with open(path, "rb") as f:
            self.model = pickle.load(f)

    def prepare(self, batch, threads):
        if self.torch.get_num_threads() != threads:
            self.torch.set_num_threads(threads)

    def run(self, batch, threads):
        if not self.classifier:
            return [self.model.predict(self.X[s:e]) for s, e in self.chunks(batch)]
        out = [self.model.predict_proba(self.X[s:e]) for s, e in self.chunks(batch)]
        return [o[:, 1] for o in out] if self.binary else out


def make_engine(peer, model, fmt, rows, cache_dir):
    if peer == "xgboost":
        return XGBoostEngine(model, fmt, rows, cache_dir)
    if peer == "lleaves":
        return LleavesEngine(model, fmt, rows, cache_dir)
    if peer == "tl2cgen":
        return TL2cgenEngine(model, fmt, rows, cache_dir)
    if peer in ("hb_tree_trav", "hb_perf_tree_trav"):
        return HummingbirdEngine(model, fmt, rows, cache_dir, peer[3:])
    raise RuntimeError(f"unknown peer {peer}")


def main():
    peer, model, fmt, rows_path, n, nf, cache_dir = sys.argv[1:8]
    # The answers go to the real stdout; whatever the libraries print (XGBoost's
    # and TL2cgen's C++ logging write to file descriptor 1) goes to stderr
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def print(text, flush=True):
        answers.write(text + "\n")
        answers.flush()

    rows = np.fromfile(rows_path, dtype=np.float64).reshape(int(n), int(nf))
    try:
        engine = make_engine(peer, model, fmt, rows, cache_dir)
    except Exception as e:  # an engine that cannot load this model is reported, not fatal
        print("error " + (f"{type(e).__name__}: {e}".splitlines() or ["?"])[0][:300], flush=True)
        traceback.print_exc(file=sys.stderr)
        return
    print("ready " + json.dumps({"compile_s": engine.compile_s, "cached": engine.cached,
                                 "version": engine.version}), flush=True)
    for line in sys.stdin:
        words = line.split()
        try:
            if words[0] == "pass":
                batch, threads = int(words[1]), int(words[2])
                engine.prepare(batch, threads)
                t = time.perf_counter()
                engine.run(batch, threads)
                print(f"us {(time.perf_counter() - t) / engine.n * 1e6:.6f}", flush=True)
            elif words[0] == "rows":
                engine.n = min(int(words[1]), len(rows))
                print("ok", flush=True)
            elif words[0] == "predict":
                engine.prepare(int(words[1]), 1)
                out = engine.run(int(words[1]), 1)
                out = np.concatenate([np.asarray(o, dtype=np.float64).reshape(len(o), -1) for o in out])
                out.tofile(words[2])
                print("ok", flush=True)
            elif words[0] == "quit":
                return
            else:
                print("error unknown command", flush=True)
        except Exception as e:
            print("error " + (f"{type(e).__name__}: {e}".splitlines() or ["?"])[0][:300], flush=True)
            traceback.print_exc(file=sys.stderr)


if __name__ == "__main__":
    main()
