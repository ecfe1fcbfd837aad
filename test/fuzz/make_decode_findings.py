#!/usr/bin/env python3
"""Write the hostile models of the decoders' memory tests as fuzz findings (standard library only).

  python3 test/fuzz/make_decode_findings.py      (from the repository root)

Each is a small model shaped to make a reader hold far more memory than
its bytes justify: before the readers held themselves to a budget of 8 MB
plus 4 bytes per byte of the model (include/silvan/decode_budget.h), each
took two to ten times that budget.  Now each must be refused with
SILVAN_ERROR_LIMIT (test_fuzz_findings.c), and the fuzz targets replay
them with their heap counted against the budget.
"""
import os

FINDINGS = "test/fuzz/findings"


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(number, wire, payload=b""):
    tag = varint((number << 3) | wire)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload


def string(number, s):
    return field(number, 2, s.encode())


def onnx_model(node):
    """A ModelProto of one graph holding node, reading input X of 2 floats."""
    dims = field(1, 2, string(2, "N")) + field(1, 2, field(1, 0, varint(2)))
    tensor = field(1, 0, varint(1)) + field(2, 2, dims)
    value = string(1, "X") + field(2, 2, field(1, 2, tensor))
    graph = field(1, 2, node) + string(2, "g") + field(11, 2, value)
    opsets = field(8, 2, string(1, "") + field(2, 0, varint(17))) + \
        field(8, 2, string(1, "ai.onnx.ml") + field(2, 0, varint(3)))
    return field(1, 0, varint(8)) + opsets + field(7, 2, graph)


def regressor(body):
    return string(1, "X") + string(2, "variable") + string(4, "TreeEnsembleRegressor") + \
        string(7, "ai.onnx.ml") + body


def write(target, name, data):
    path = os.path.join(FINDINGS, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def xgboost_model(learner_extra, trees):
    head = ('{"learner":{%s"gradient_booster":{"model":{"gbtree_model_param":'
            '{"num_trees":"%d"},"tree_info":[%s],"trees":[' %
            (learner_extra, len(trees), ",".join("0" for _ in trees)))
    tail = (']},"name":"gbtree"},"learner_model_param":{"base_score":"5E-1",'
            '"num_feature":"2"},"objective":{"name":"reg:squarederror"}}}')
    return head + ",".join(trees) + tail


LEAF = ('{"tree_param":{"num_nodes":"1"},"left_children":[-1],"right_children":[-1],'
        '"split_indices":[0],"split_conditions":[0.5],"default_left":[0]}')


def dense_tree(n, extra):
    arrays = ["left_children", "right_children", "split_indices", "split_conditions",
              "default_left"]
    parts = ['"tree_param":{"num_nodes":"%d"}' % n]
    for a in arrays:
        item = "-1" if a in ("left_children", "right_children") else "0"
        parts.append('"%s":[%s]' % (a, ",".join([item] * n)))
    return "{" + extra + ",".join(parts) + "}"


def main():
    # protobuf-c: an AttributeProto struct (168 bytes) per two-byte empty attribute
    write("onnx", "empty_attributes.onnx", onnx_model(regressor(b"\x2a\x00" * 50000)))
    # protobuf-c: a NodeProto struct (96 bytes) per two-byte empty node
    write("onnx", "empty_nodes.onnx", field(1, 0, varint(8)) + field(7, 2, b"\x0a\x00" * 100000))
    # protobuf-c: an unknown field record and a copy per two-byte unknown field of a node
    write("onnx", "unknown_fields.onnx", onnx_model(regressor(b"\x78\x00" * 100000)))
    # protobuf-c: a TensorProto struct (184 bytes) per two-byte empty tensor of an attribute
    attr = string(1, "nodes_values_as_tensor") + field(20, 0, varint(4)) + b"\x52\x00" * 50000
    write("onnx", "empty_tensors.onnx", onnx_model(regressor(field(5, 2, attr))))
    # json-c: some 800 bytes per three-byte empty object outside the trees
    write("xgboost_json", "learner_objects.json",
          xgboost_model('"junk":[' + ",".join(["{}"] * 33000) + "],", [LEAF]))
    # json-c: a tree of an unusual shape (a nested object) holds 100 bytes per two-byte value
    write("xgboost_json", "dense_tree_nested.json",
          xgboost_model("", [dense_tree(25000, '"x":{"y":{}},')]))
    # a category set holding category 16777215 takes 2 MB, whatever its list
    cat = ('{"tree_param":{"num_nodes":"3"},"left_children":[1,-1,-1],'
           '"right_children":[2,-1,-1],"split_indices":[0,0,0],"split_conditions":[0,1,2],'
           '"default_left":[0,0,0],"split_type":[1,0,0],"categories":[16777215],'
           '"categories_nodes":[0],"categories_segments":[0],"categories_sizes":[1]}')
    write("xgboost_json", "category_blowup.json", xgboost_model("", [cat] * 8))


if __name__ == "__main__":
    main()
