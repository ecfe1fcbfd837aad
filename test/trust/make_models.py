#!/usr/bin/env python3
"""Write big models, benign and hostile, for test/trust/decode_memory.sh
(standard library only).

  make_models.py DIR [MEGABYTES]

Hostile ones are the shapes of test/fuzz/make_decode_findings.py at the
size of the attack (30 MB by default): ONNX of empty attributes and of
unknown fields, XGBoost JSON of empty objects beside the trees and of a
tree of an unusual shape, LightGBM text of a tree that claims more leaves
than its text holds.  Benign ones are as big: an XGBoost model made of a
real one's trees repeated (from ../shared/models), a LightGBM model of
complete trees, and one of millions of named features.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))
import make_decode_findings as f  # noqa: E402

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "models")


def write(directory, name, data):
    with open(os.path.join(directory, name), "wb") as out:
        out.write(data if isinstance(data, bytes) else data.encode())


def lightgbm(trees, leaves, names="a b c d", max_feature=3, claimed_leaves=None):
    """Complete trees of leaves leaves over four features, as LightGBM writes them"""
    head = ("tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
            "max_feature_idx=%d\nobjective=regression\nfeature_names=%s\n"
            "feature_infos=%s\n\n" % (max_feature, names, " ".join(["[-1:1]"] * (max_feature + 1))))
    parts = [head]
    splits = leaves - 1
    for t in range(trees):
        def child(c):
            return str(c if c < splits else -(c - splits) - 1)
        parts.append(
            "Tree=%d\nnum_leaves=%d\nnum_cat=0\nsplit_feature=%s\nsplit_gain=%s\nthreshold=%s\n"
            "decision_type=%s\nleft_child=%s\nright_child=%s\nleaf_value=%s\nshrinkage=1\n\n\n" % (
                t, claimed_leaves or leaves,
                " ".join(str((t + s) % 4) for s in range(splits)), " ".join(["1"] * splits),
                " ".join("%.6g" % (((t * 7 + s * 3) % 17) / 17.0 - 0.5) for s in range(splits)),
                " ".join(["2"] * splits), " ".join(child(2 * s + 1) for s in range(splits)),
                " ".join(child(2 * s + 2) for s in range(splits)),
                " ".join("%.6g" % (((t + l) % 9) * 0.125 - 0.5) for l in range(leaves))))
    parts.append("end of trees\n")
    return "".join(parts)


def xgboost_repeated(megabytes):
    """A real XGBoost model's trees repeated until the model has about megabytes"""
    path = os.path.join(SHARED, "asprasad_treebeard", "xgb_models--higgs_xgb_model_save.json")
    with open(path) as src:
        model = json.load(src)
    gb = model["learner"]["gradient_booster"]["model"]
    trees = gb["trees"]
    copies = max(1, int(megabytes * 2**20 / os.path.getsize(path)))
    new = []
    for c in range(copies):
        for t in trees:
            t = dict(t)
            t["id"] = len(new)
            new.append(t)
    gb["trees"] = new
    gb["tree_info"] = [0] * len(new)
    gb["gbtree_model_param"]["num_trees"] = str(len(new))
    if "iteration_indptr" in gb:
        gb["iteration_indptr"] = list(range(len(new) + 1))
    return json.dumps(model, separators=(",", ":"))


def main():
    directory = sys.argv[1]
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    n = mb * 2**20
    os.makedirs(directory, exist_ok=True)
    # hostile
    write(directory, "hostile_onnx_empty_attributes.onnx",
          f.onnx_model(f.regressor(b"\x2a\x00" * (n // 2))))
    write(directory, "hostile_onnx_unknown_fields.onnx",
          f.onnx_model(f.regressor(b"\x78\x00" * (n // 2))))
    write(directory, "hostile_xgboost_empty_objects.json",
          f.xgboost_model('"junk":[' + ",".join(["{}"] * (n // 3)) + "],", [f.LEAF]))
    write(directory, "hostile_xgboost_unusual_tree.json",
          f.xgboost_model("", [f.dense_tree(n // 11, '"x":{"y":{}},')]))
    write(directory, "wide_lightgbm_feature_names.txt",
          lightgbm(1, 2, names=" ".join("f%d" % i for i in range(n // 9)), max_feature=n // 9 - 1))
    write(directory, "hostile_lightgbm_claimed_leaves.txt",
          lightgbm(1, 2**20, claimed_leaves=2**31 - 1))
    # benign
    write(directory, "benign_xgboost.json", xgboost_repeated(mb))
    leaves = 64
    per_tree = len(lightgbm(1, leaves)) - 200
    write(directory, "benign_lightgbm.txt", lightgbm(max(1, n // per_tree), leaves))


if __name__ == "__main__":
    main()
