#!/usr/bin/env python3
"""Write a large synthetic model for load-time and memory measurements.

  python3 test/perf/make_big_model.py FORMAT TREES DEPTH OUT

FORMAT is xgboost (save_model() JSON, XGBoost 1.7 layout with every
per-node array XGBoost writes) or lightgbm (save_model() text).  Each of
the TREES trees is complete to DEPTH (0: a single leaf, as in the reported
1e6-tree model).  Standard library only; output is streamed, so any size
can be written.  The values are deterministic, not trained.
"""
import sys

FEATURES = 8


def xgb_tree(i, depth):
    """One XGBoost tree as a JSON object."""
    n = 2 ** (depth + 1) - 1
    inner = 2 ** depth - 1
    left = [2 * k + 1 if k < inner else -1 for k in range(n)]
    right = [2 * k + 2 if k < inner else -1 for k in range(n)]
    parents = [2147483647] + [(k - 1) // 2 for k in range(1, n)]
    cond = ["%.8E" % ((k % 7) * 0.25 - 0.75 if k < inner else ((i + k) % 11) * 1e-2 - 5e-2)
            for k in range(n)]
    feat = [(i + k) % FEATURES if k < inner else 0 for k in range(n)]

    def arr(values):
        return "[" + ",".join(str(v) for v in values) + "]"

    return ('{"base_weights":%s,"categories":[],"categories_nodes":[],'
            '"categories_segments":[],"categories_sizes":[],"default_left":%s,"id":%d,'
            '"left_children":%s,"loss_changes":%s,"parents":%s,"right_children":%s,'
            '"split_conditions":%s,"split_indices":%s,"split_type":%s,"sum_hessian":%s,'
            '"tree_param":{"num_deleted":"0","num_feature":"%d","num_nodes":"%d",'
            '"size_leaf_vector":"0"}}'
            % (arr(cond), arr([k % 2 for k in range(n)]), i, arr(left), arr(["0E0"] * n),
               arr(parents), arr(right), arr(cond), arr(feat), arr([0] * n),
               arr(["1E0"] * n), FEATURES, n))


def write_xgboost(out, trees, depth):
    out.write('{"learner":{"attributes":{},"feature_names":[],"feature_types":[],'
              '"gradient_booster":{"model":{"gbtree_model_param":{"num_parallel_tree":"1",'
              '"num_trees":"%d","size_leaf_vector":"0"},"tree_info":[%s],"trees":['
              % (trees, ",".join(["0"] * trees)))
    for i in range(trees):
        if i:
            out.write(",")
        out.write(xgb_tree(i, depth))
    out.write(']},"name":"gbtree"},"learner_model_param":{"base_score":"5E-1",'
              '"boost_from_average":"1","num_class":"0","num_feature":"%d","num_target":"1"},'
              '"objective":{"name":"reg:squarederror","reg_loss_param":'
              '{"scale_pos_weight":"1"}}},"version":[1,7,4]}' % FEATURES)


def lgb_tree(i, depth):
    """One LightGBM tree block."""
    leaves = 2 ** depth
    inner = leaves - 1
    lines = ["Tree=%d" % i, "num_leaves=%d" % leaves, "num_cat=0"]
    if inner:
        # internal node k has children 2k+1, 2k+2; past the internal ones they are leaves
        def child(c):
            return str(c) if c < inner else str(~(c - inner))
        lines += ["split_feature=" + " ".join(str((i + k) % FEATURES) for k in range(inner)),
                  "split_gain=" + " ".join(["1"] * inner),
                  "threshold=" + " ".join("%.17g" % ((k % 7) * 0.25 - 0.75) for k in range(inner)),
                  "decision_type=" + " ".join(["2"] * inner),
                  "left_child=" + " ".join(child(2 * k + 1) for k in range(inner)),
                  "right_child=" + " ".join(child(2 * k + 2) for k in range(inner))]
    lines += ["leaf_value=" + " ".join("%.17g" % (((i + k) % 11) * 1e-2 - 5e-2)
                                       for k in range(leaves)),
              "leaf_weight=" + " ".join(["1"] * leaves),
              "leaf_count=" + " ".join(["1"] * leaves),
              "internal_value=" + " ".join(["0"] * inner),
              "internal_weight=" + " ".join(["0"] * inner),
              "internal_count=" + " ".join(["1"] * inner),
              "is_linear=0", "shrinkage=1", "", ""]
    return "\n".join(lines) + "\n"


def write_lightgbm(out, trees, depth):
    out.write("tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
              "max_feature_idx=%d\nobjective=regression\nfeature_names=%s\n"
              "feature_infos=%s\n\n" % (FEATURES - 1,
                                        " ".join("f%d" % k for k in range(FEATURES)),
                                        " ".join(["[-1:1]"] * FEATURES)))
    for i in range(trees):
        out.write(lgb_tree(i, depth))
    out.write("end of trees\n\nparameters:\n[objective: regression]\nend of parameters\n")


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("xgboost", "lightgbm"):
        sys.exit(__doc__)
    trees, depth = int(sys.argv[2]), int(sys.argv[3])
    with open(sys.argv[4], "w") as out:
        (write_xgboost if sys.argv[1] == "xgboost" else write_lightgbm)(out, trees, depth)


if __name__ == "__main__":
    main()
