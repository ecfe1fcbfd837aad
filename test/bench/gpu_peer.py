#!/usr/bin/env python3
"""Hummingbird's tree strategies in torch on a CUDA device: the GPU peer of bench_gpu.

    gpu_peer.py MODEL.json ROWS.bin NUM_FEATURES MARGINS.bin [BATCH ...]

Reads an XGBoost JSON model (numeric splits) and the very rows bench_gpu scored
(raw row-major float32), and times, per batch size, Hummingbird's two
traversal strategies written out in torch as its paper and code describe them
(hummingbird/ml/operator_converters/_tree_implementations.py):

  TreeTraversal         every tree's nodes in one padded table; per level, a
                        gather of each row's node, a gather of its feature, a
                        compare, and a where() to the left or right child
  PerfectTreeTraversal  trees padded to perfect trees of the forest's depth;
                        per level index = 2 * index + (go right)

Each pass includes the rows' copy to the device and the margins' copy back,
as bench_gpu's does.  One warm-up, median of 5.  The sums are checked against
MARGINS.bin (the reference interpreter's margins of the first rows, float64,
written by bench_gpu) up to the model's constant base score.  Prints
  peer strategy batch us_per_row check
"""
import json
import os
import sys
import time

import numpy as np
import torch


def load_trees(path):
    """The model's trees as lists (numeric splits only; XGBoost: x < t goes left)."""
    learner = json.load(open(path))["learner"]
    trees = learner["gradient_booster"]["model"]["trees"]
    out = []
    for t in trees:
        if any(t.get("split_type", [0])):
            sys.exit("gpu_peer.py: categorical splits are not implemented here")
        out.append(t)
    return out


def depth_of(tree):
    depth = [0] * len(tree["left_children"])
    best = 0
    for i, (l, r) in enumerate(zip(tree["left_children"], tree["right_children"])):
        if l >= 0:
            depth[l] = depth[r] = depth[i] + 1
            best = max(best, depth[i] + 1)
    return best


def tree_traversal(trees, device):
    """Hummingbird's TreeTraversal tables: [trees, max_nodes] each."""
    n = max(len(t["left_children"]) for t in trees)
    shape = (len(trees), n)
    lefts = np.zeros(shape, np.int64)
    rights = np.zeros(shape, np.int64)
    feats = np.zeros(shape, np.int64)
    thresh = np.zeros(shape, np.float32)
    dleft = np.zeros(shape, np.bool_)
    values = np.zeros(shape, np.float32)
    for k, t in enumerate(trees):
        for i, (l, r) in enumerate(zip(t["left_children"], t["right_children"])):
            if l < 0:  # a leaf points at itself
                lefts[k, i] = rights[k, i] = i
                values[k, i] = t["split_conditions"][i]
                thresh[k, i] = np.inf
            else:
                lefts[k, i], rights[k, i] = l, r
                feats[k, i] = t["split_indices"][i]
                thresh[k, i] = t["split_conditions"][i]
                dleft[k, i] = t["default_left"][i]
    depth = max(depth_of(t) for t in trees)
    offsets = (np.arange(len(trees), dtype=np.int64) * n)[None, :]
    tensors = [torch.from_numpy(a.reshape(-1)).to(device)
               for a in (lefts, rights, feats, thresh, dleft, values)]
    return depth, torch.from_numpy(offsets).to(device), n, tensors


def run_tree_traversal(x, model):
    depth, offsets, n, (lefts, rights, feats, thresh, dleft, values) = model
    idx = offsets.expand(x.shape[0], -1).clone()
    for _ in range(depth):
        f = feats[idx]
        v = torch.gather(x, 1, f)
        right = torch.where(torch.isnan(v), ~dleft[idx], v >= thresh[idx])
        idx = torch.where(right, rights[idx], lefts[idx]) + offsets
    return values[idx].sum(1)


def perfect_tables(trees, device):
    """Trees padded to perfect trees of the forest's depth (leaves repeated down)."""
    depth = max(depth_of(t) for t in trees)
    inner = (1 << depth) - 1
    feats = np.zeros((len(trees), inner), np.int64)
    thresh = np.full((len(trees), inner), np.inf, np.float32)
    dleft = np.ones((len(trees), inner), np.bool_)
    leaves = np.zeros((len(trees), 1 << depth), np.float32)
    for k, t in enumerate(trees):
        def fill(node, pos, level):
            if t["left_children"][node] < 0:
                if level == depth:
                    leaves[k, pos - inner] = t["split_conditions"][node]
                else:  # a leaf above the bottom: always left, down to the bottom
                    thresh[k, pos] = np.inf
                    dleft[k, pos] = True
                    fill(node, 2 * pos + 1, level + 1)
                    fill(node, 2 * pos + 2, level + 1)
                return
            feats[k, pos] = t["split_indices"][node]
            thresh[k, pos] = t["split_conditions"][node]
            dleft[k, pos] = t["default_left"][node]
            fill(t["left_children"][node], 2 * pos + 1, level + 1)
            fill(t["right_children"][node], 2 * pos + 2, level + 1)
        fill(0, 0, 0)
    return depth, [torch.from_numpy(a).to(device) for a in (feats, thresh, dleft, leaves)]


def run_perfect(x, model):
    depth, (feats, thresh, dleft, leaves) = model
    trees = feats.shape[0]
    rows = x.shape[0]
    tree_ids = torch.arange(trees, device=x.device)[None, :].expand(rows, -1)
    idx = torch.zeros((rows, trees), dtype=torch.int64, device=x.device)
    for _ in range(depth):
        f = feats[tree_ids, idx]
        v = torch.gather(x, 1, f)
        right = torch.where(torch.isnan(v), ~dleft[tree_ids, idx], v >= thresh[tree_ids, idx])
        idx = 2 * idx + 1 + right.long()
    return leaves[tree_ids, idx - ((1 << depth) - 1)].sum(1)


def time_pass(fn, model, rows, batch, device):
    out = np.empty(rows.shape[0], np.float32)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for lo in range(0, rows.shape[0], batch):
        x = torch.from_numpy(rows[lo:lo + batch]).to(device)
        out[lo:lo + batch] = fn(x, model).cpu().numpy()
    sync()
    return time.perf_counter() - start, out


def main():
    model_path, rows_path, num_features, margins_path = sys.argv[1:5]
    batches = [int(b) for b in sys.argv[5:]] or [4096, 65536, 1048576]
    device = torch.device(os.environ.get("SILVAN_PEER_DEVICE", "cuda"))
    rows = np.fromfile(rows_path, np.float32).reshape(-1, int(num_features))
    want = np.fromfile(margins_path, np.float64)
    trees = load_trees(model_path)
    strategies = [("TreeTraversal", tree_traversal(trees, device), run_tree_traversal),
                  ("PerfectTreeTraversal", perfect_tables(trees, device), run_perfect)]
    for batch in batches:
        for name, model, fn in strategies:
            try:
                time_pass(fn, model, rows, batch, device)
                times = []
                for _ in range(5):
                    t, out = time_pass(fn, model, rows, batch, device)
                    times.append(t)
            except RuntimeError as e:  # out of device memory at large batches
                print(f"torch\t{name}\t{batch}\tfailed: {str(e).splitlines()[0]}")
                continue
            n = min(len(want), len(out))
            offset = want[:n] - out[:n]
            spread = float(np.max(offset) - np.min(offset)) if n else 0.0
            check = f"offset {np.median(offset):.6g}, spread {spread:.2g}"
            print(f"torch\t{name}\t{batch}\t{sorted(times)[2] * 1e6 / rows.shape[0]:.5f}\t{check}",
                  flush=True)


if __name__ == "__main__":
    main()
