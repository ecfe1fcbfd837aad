#!/usr/bin/env python3
"""Write the text seed corpora of the fuzz targets (standard library only).

  python3 test/fuzz/make_seeds.py      (from the repository root)

corpus/xgboost_json: a dozen of test/fixtures/*.json cut down to their
first iteration or two (small seeds fuzz faster), with the per-node arrays
the reader ignores dropped from all but one, plus XGBoost 2.x layouts of
the base score.  corpus/lightgbm_text: the LightGBM fixture and variants
of it (multi-class, random forest, old layout, CRLF, categorical sets).
corpus/schedule: schedules that use every directive.  make_seeds.sh runs
this, then makes the binary-form seeds from these models.
"""
import json
import os

FIXTURES = "test/fixtures"
CORPUS = "test/fuzz/corpus"

XGB_SEEDS = ["binary_logistic", "binary_base_score", "categorical", "dart",
             "deep_tree", "missing_nan", "multi_parallel_tree", "multi_softmax",
             "one_feature", "parallel_tree", "rank_ndcg", "reg_gamma",
             "wide_features"]
IGNORED_ARRAYS = ["base_weights", "loss_changes", "parents", "sum_hessian"]


def write(target, name, text):
    path = os.path.join(CORPUS, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(text)


def gbtree_of(learner):
    booster = learner["gradient_booster"]
    return booster["gbtree"] if booster["name"] == "dart" else booster


def cut_xgboost(doc, keep_ignored):
    """Keep the first iteration (at least two trees) of a model."""
    learner = doc["learner"]
    booster = learner["gradient_booster"]
    model = gbtree_of(learner)["model"]
    groups = max(1, int(learner["learner_model_param"].get("num_class", "0")))
    parallel = int(model["gbtree_model_param"].get("num_parallel_tree", "1"))
    keep = min(len(model["trees"]), max(2, groups * parallel))
    model["trees"] = model["trees"][:keep]
    model["tree_info"] = model["tree_info"][:keep]
    model["gbtree_model_param"]["num_trees"] = str(keep)
    if booster["name"] == "dart":
        booster["weight_drop"] = booster["weight_drop"][:keep]
    for tree in model["trees"]:
        for key in ([] if keep_ignored else IGNORED_ARRAYS):
            tree.pop(key, None)
    return doc


def dumps(doc):
    return json.dumps(doc, separators=(",", ":"))


def xgboost_seeds():
    for name in XGB_SEEDS:
        with open(os.path.join(FIXTURES, name + ".json")) as f:
            doc = cut_xgboost(json.load(f), name == "binary_logistic")
        write("xgboost_json", name + ".json", dumps(doc))
        if name == "multi_softmax":
            # XGBoost 2.1 writes one base score per class, bracketed
            doc["learner"]["learner_model_param"]["base_score"] = "[5E-1,2.5E-1,1E0]"
            doc["version"] = [2, 1, 0]
            write("xgboost_json", "multi_softmax_v21.json", dumps(doc))
        if name == "parallel_tree":
            # trees placed by their ids, listed backwards
            model = gbtree_of(doc["learner"])["model"]
            model["trees"].reverse()
            write("xgboost_json", "ids_reversed.json", dumps(doc))
            # a second "trees" key: json-c keeps the last, the scan gives up
            text = dumps(doc).replace('"trees":[', '"trees":[],"trees":[', 1)
            write("xgboost_json", "trees_twice.json", text)
        if name == "binary_logistic":
            doc["learner"]["learner_model_param"]["base_score"] = "[6.25E-1]"
            doc["version"] = [2, 1, 0]
            write("xgboost_json", "binary_logistic_v21.json", json.dumps(doc, indent=1))


LGB_MODEL = """tree
version=v3
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=2
objective=binary sigmoid:0.5
feature_names=a b c
feature_infos=none none none
tree_sizes=300 200 250

Tree=0
num_leaves=3
num_cat=1
split_feature=1 0
split_gain=1 1
threshold=0 0.5
decision_type=1 10
left_child=-1 -2
right_child=1 -3
leaf_value=0.25 -0.5 1.5
leaf_weight=1 1 1
leaf_count=1 1 1
internal_value=0 0
internal_weight=0 0
internal_count=3 2
cat_boundaries=0 2
cat_threshold=10 1
is_linear=0
shrinkage=1


Tree=1
num_leaves=1
num_cat=0
split_feature=
split_gain=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.125
leaf_weight=
leaf_count=
internal_value=
internal_weight=
internal_count=
is_linear=0
shrinkage=1


Tree=2
num_leaves=2
num_cat=0
split_feature=2
split_gain=1
threshold=1.0000000000000002
decision_type=4
left_child=-1
right_child=-2
leaf_value=-1 2
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=0
internal_count=2
is_linear=0
shrinkage=0.1


end of trees

feature_importances:
a=1

parameters:
[boosting: gbdt]
[objective: binary]
end of parameters

pandas_categorical:null
"""


def lightgbm_seeds():
    with open(os.path.join(FIXTURES, "lightgbm_small.txt")) as f:
        write("lightgbm_text", "lightgbm_small.txt", f.read())
    write("lightgbm_text", "binary_cat.txt", LGB_MODEL)
    multi = (LGB_MODEL.replace("num_class=1\nnum_tree_per_iteration=1",
                               "num_class=3\nnum_tree_per_iteration=3")
             .replace("objective=binary sigmoid:0.5", "objective=multiclass num_class:3"))
    write("lightgbm_text", "multiclass.txt", multi)
    write("lightgbm_text", "multiclassova.txt",
          multi.replace("objective=multiclass", "objective=multiclassova sigmoid:2"))
    write("lightgbm_text", "random_forest.txt",
          LGB_MODEL.replace("objective=binary sigmoid:0.5\n",
                            "objective=regression sqrt\naverage_output\n"))
    old = LGB_MODEL.replace("version=v3", "version=v2").replace("end of trees\n\n", "")
    write("lightgbm_text", "old_layout.txt", old.replace("tree_sizes=300 200 250\n", ""))
    write("lightgbm_text", "crlf.txt",
          LGB_MODEL.replace("objective=binary sigmoid:0.5", "objective=poisson")
          .replace("\n", "\r\n"))
    write("lightgbm_text", "xentropy.txt",
          LGB_MODEL.replace("objective=binary sigmoid:0.5", "objective=cross_entropy_lambda"))


SCHEDULES = [
    "",
    "tile(batch, b0, b1, 4)\nreorder(b0, tree, b1)\ninterleave(b1)\nunrollWalk(b1, 3)",
    "tile(batch, b0, b1, 64); reorder(b0, tree, b1); tile(b1, b2, b3, 8); "
    "interleave(b3); parallel(b0); cache(tree)",
    "reorder(tree, batch)\nsplit(tree, t_depth1, t_depth2, 2)\n"
    "unrollWalk(batch_t_depth1, 1)\nunrollWalk(batch_t_depth2, 2)",
    "tile(batch, b0, b1, 16); tile(tree, t0, t1, 3); reorder(b0, t0, b1, t1); "
    "parallel(t0); atomicReduce(t0)",
    "tile(tree, t0, t1, 2); reorder(t0, batch, t1); parallel(t0); vectorReduce(t0, 4)",
    "tile(batch, b0, b1, 256); reorder(b0, tree, b1); parallel(b0); peelWalk(b1, 2)",
    "reorder(tree, batch); parallel(tree); sharedReduce(tree)",
    "tile(batch, b0, b1, 32)\ngpuDimension(b0, grid.x)\ngpuDimension(b1, block.x)\n"
    "tile(tree, t0, t1, 4)\ngpuDimension(t0, grid.y)",
    "representation(sparse); tileTrees(4, probabilistic); reorderTrees()",
    "representation(reorg); tileTrees(8, uniform); parallel(batch); cache(tree)",
    "representation(array)\ntileTrees(2, uniform)\ntile(batch, b0, b1, 8)\n"
    "reorder(b0, tree, b1)\ninterleave(b1)\nunrollWalk(b1, 4)",
    "split(batch, lo, hi, 100); tile(tree_hi, t0, t1, 5); reorder(t0, hi, t1)",
    "tile(batch, b0, b1, 4)\nsplit(b1, x, y, 2)\nspecialize(tree_y)\ncache(tree_x)",
    "reorder(tree, batch)\nsplit(tree, ta, tb, 1)\ntile(batch_tb, b0, b1, 8)\n"
    "interleave(b1)\npeelWalk(b1, 1)\nspecialize(batch_ta)",
    "# a comment\nreorder(tree, batch) -- and another\n\nparallel(tree);\n",
    "tile(batch, b0, b1, 128); reorder(b0, tree, b1); interleave(b1); specialize(tree)",
]


def schedule_seeds():
    for i, text in enumerate(SCHEDULES):
        write("schedule", "schedule_%02d.txt" % i, text)


if __name__ == "__main__":
    xgboost_seeds()
    lightgbm_seeds()
    schedule_seeds()
