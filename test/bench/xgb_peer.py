import sys, time
import numpy as np, xgboost as xgb
model, path, nf, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
X = np.fromfile(path, dtype=np.float32).reshape(batch, nf)
b = xgb.Booster(model_file=model)
b.set_param({'nthread': 1})
m = np.asarray(b.inplace_predict(X, predict_type='margin'), dtype=np.float32).reshape(-1)
ours = np.fromfile(path.replace('rows.bin', 'margins.bin'), dtype=np.float32)
same = ours.size == m.size and np.array_equal(ours.view(np.uint32), m.view(np.uint32))
print("  xgboost margins vs silvan compiled: %s (max abs diff %g)" % ("bitwise identical" if same else "DIFFERENT", float(np.max(np.abs(ours - m))) if ours.size == m.size else -1))
n = 0; t0 = time.perf_counter()
while time.perf_counter() - t0 < 1.0:
    b.inplace_predict(X, predict_type='margin'); n += 1
best = 1e9
for r in range(5):
    a = time.perf_counter()
    for k in range(max(1, n // 5)):
        b.inplace_predict(X, predict_type='margin')
    best = min(best, (time.perf_counter() - a) / max(1, n // 5))
print("  xgboost %s inplace_predict nthread=1: %.3f us/row" % (xgb.__version__, best / batch * 1e6))
