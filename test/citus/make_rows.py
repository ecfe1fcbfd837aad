"""Rows for the Citus test and the real XGBoost's predictions of them.

usage: make_rows.py MODEL.json N OUT.csv

Writes N rows "id,{f1,...,fk},expected": each feature drawn between the
model's split thresholds for that feature (each cell equally likely), 5%
of values exactly a threshold, 2% NaN; expected is XGBoost's predict() of
the row, as float32.  Seeded, so every run writes the same rows.
"""
import json
import sys

import numpy as np
import xgboost


def thresholds(model):
    """Every split threshold of the model, per feature"""
    trees = model["learner"]["gradient_booster"]["model"]["trees"]
    nf = int(model["learner"]["learner_model_param"]["num_feature"])
    per = [set() for _ in range(nf)]
    for tree in trees:
        for left, index, cond in zip(tree["left_children"], tree["split_indices"],
                                     tree["split_conditions"]):
            if left != -1:
                per[index].add(np.float32(cond))
    return [sorted(t) for t in per]


def column(rng, n, t):
    """n float32 values of a feature with thresholds t"""
    if not t:
        x = rng.uniform(-1.0, 1.0, size=n)
    else:
        pad = max(float(t[-1] - t[0]), 1.0) * 0.05
        edges = np.array([float(t[0]) - pad] + [float(v) for v in t] + [float(t[-1]) + pad])
        cell = rng.integers(0, len(edges) - 1, size=n)
        x = edges[cell] + rng.uniform(0.01, 0.99, size=n) * (edges[cell + 1] - edges[cell])
        exact = rng.random(n) < 0.05
        x[exact] = rng.choice(np.asarray(t, dtype=np.float64), size=int(exact.sum()))
    x[rng.random(n) < 0.02] = np.nan
    return x.astype(np.float32)


def main():
    path, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path) as f:
        model = json.load(f)
    rng = np.random.default_rng(20261129)
    rows = np.column_stack([column(rng, n, t) for t in thresholds(model)])
    xgboost.set_config(verbosity=0)
    booster = xgboost.Booster()
    booster.load_model(path)
    expected = booster.predict(xgboost.DMatrix(rows, missing=np.nan), validate_features=False)
    with open(out, "w") as f:
        for i in range(n):
            features = ",".join("NaN" if np.isnan(v) else repr(float(v)) for v in rows[i])
            f.write('%d,"{%s}",%r\n' % (i + 1, features, float(np.float32(expected[i]))))


main()
