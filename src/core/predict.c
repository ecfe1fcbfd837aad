/*
 * predict.c
 *		Everything around the tree sum: base margins, averaging, transforms.
 *
 * Shared by the interpreter and compiled code so both agree bit for bit.
 * Arithmetic follows the training library: XGBoost works in float (its
 * softmax sums in double, and survival:aft exponentiates in double),
 * LightGBM in double.  ONNX forests add their base margins after the
 * trees (base_margin_last) and use ONNX Runtime's post transforms
 * (ml_common.h: ComputeLogistic, ComputeProbit/ErfInv, ComputeSoftmax,
 * ComputeSoftmaxZero), all in float.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "silvan/forest.h"

/*
 * Fill the accumulator with its starting values: the base margins, or,
 * when they come last, 0 (SUM) or NaN ("no tree yet", MIN and MAX)
 */
void
ForestMarginsInit(const Forest *forest, void *acc, int64_t num_rows)
{
	int32_t		groups = forest->num_groups;
	size_t		row_bytes = (size_t) groups * ForestValueSize(forest);
	size_t		total = (size_t) num_rows * row_bytes;
	char	   *bytes = (char *) acc;

	if (num_rows <= 0 || groups <= 0)
		return;
	for (int32_t g = 0; g < groups; g++)
	{
		double		start = forest->base_margin[g];

		if (forest->aggregate != FOREST_AGGREGATE_SUM)
			start = NAN;
		else if (forest->base_margin_last)
			start = 0.0;
		if (forest->precision == FOREST_FLOAT32)
			((float *) acc)[g] = (float) start;
		else
			((double *) acc)[g] = start;
	}
	/* every other row is a copy of the first: double the copied part each time */
	for (size_t done = row_bytes; done < total;)
	{
		size_t		n = done < total - done ? done : total - done;

		memcpy(bytes + done, bytes, n);
		done += n;
	}
}

/* One margin of a base-last forest: aggregate (NaN: none), average, add the base */
static double
FinishBaseLast(const Forest *forest, const void *acc, int64_t i, int32_t g)
{
	if (forest->precision == FOREST_FLOAT32)
	{
		float		m = ((const float *) acc)[i];

		if (isnan(m))
			m = 0.0f;
		if (forest->average_output)
			m /= (float) forest->average_divisor;
		return m + (float) forest->base_margin[g];
	}
	else
	{
		double		m = ((const double *) acc)[i];

		if (isnan(m))
			m = 0.0;
		if (forest->average_output)
			m /= (double) forest->average_divisor;
		return m + forest->base_margin[g];
	}
}

/* Average if the model asks for it and widen the margins to double */
void
ForestMarginsFinish(const Forest *forest, const void *acc, int64_t num_rows,
					double *margins)
{
	int64_t		n = num_rows * forest->num_groups;

	if (forest->base_margin_last)
	{
		for (int64_t i = 0; i < n; i++)
			margins[i] = FinishBaseLast(forest, acc, i, (int32_t) (i % forest->num_groups));
		return;
	}
	if (forest->precision == FOREST_FLOAT32)
	{
		const float *values = (const float *) acc;

		if (forest->average_output)
			for (int64_t i = 0; i < n; i++)
				margins[i] = (double) values[i] / forest->average_divisor;
		else
			for (int64_t i = 0; i < n; i++)
				margins[i] = values[i];
	}
	else
	{
		const double *values = (const double *) acc;

		if (forest->average_output)
			for (int64_t i = 0; i < n; i++)
				margins[i] = values[i] / forest->average_divisor;
		else
			memcpy(margins, values, sizeof(double) * n);
	}
}

/*
 * exp of a margin's difference from the row's largest: the largest's own
 * difference is 0 (x - x is +0), whose exp is exactly 1 (IEEE 754), so
 * its call is skipped, a third of a 3-class row's softmax; anything else,
 * NaN and inf - inf included, goes to exp
 */
static inline double
ExpOfShift(double d)
{
	return d == 0.0 ? 1.0 : exp(d);
}

/* The same in float */
static inline float
ExpfOfShift(float d)
{
	return d == 0.0f ? 1.0f : expf(d);
}

/* XGBoost's float softmax (sum in double, as xgboost/src/common/math.h) */
static void
SoftmaxFloat(const double *margins, double *out, int32_t n)
{
	float		wmax = (float) margins[0];
	double		wsum = 0.0;

	for (int32_t i = 1; i < n; i++)
		wmax = fmaxf((float) margins[i], wmax);
	for (int32_t i = 0; i < n; i++)
	{
		float		e = ExpfOfShift((float) margins[i] - wmax);

		out[i] = e;
		wsum += e;
	}
	for (int32_t i = 0; i < n; i++)
		out[i] = (float) out[i] / (float) wsum;
}

/* LightGBM's double softmax (Common::Softmax) */
static void
SoftmaxDouble(const double *margins, double *out, int32_t n)
{
	double		wmax = margins[0];
	double		wsum = 0.0;

	for (int32_t i = 1; i < n; i++)
		wmax = fmax(margins[i], wmax);
	for (int32_t i = 0; i < n; i++)
	{
		out[i] = ExpOfShift(margins[i] - wmax);
		wsum += out[i];
	}
	for (int32_t i = 0; i < n; i++)
		out[i] /= wsum;
}

/* ONNX Runtime's ErfInv (Winitzki's approximation, a = 0.147), in float */
static float
OnnxErfInv(float x)
{
	float		sgn = x < 0 ? -1.0f : 1.0f;
	float		lg;
	float		v;
	float		v2;
	float		v3;

	x = (1 - x) * (1 + x);
	lg = logf(x);
	v = 2 / ((float) M_PI * 0.147f) + 0.5f * lg;
	v2 = 1 / (0.147f) * lg;
	v3 = -v + sqrtf(v * v - v2);
	return sgn * sqrtf(v3);
}

/* ONNX's element-wise post transforms (ONNX Runtime's ml_common.h), in float */
static float
TransformOnnx(ForestTransform transform, float x)
{
	if (transform == FOREST_TRANSFORM_ONNX_LOGISTIC)
	{
		float		v = 1 / (1 + expf(-fabsf(x)));

		return x < 0 ? 1 - v : v;
	}
	if (transform == FOREST_TRANSFORM_ONNX_PROBIT)
		return (float) M_SQRT2 * OnnxErfInv(2 * x - 1);
	return x;
}

/* ONNX Runtime's ComputeSoftmax / ComputeSoftmaxZero, in float */
static void
SoftmaxOnnx(const double *margins, double *out, int32_t n, bool skip_zero)
{
	float		vmax = -FLT_MAX;
	float		sum = 0.0f;
	float		exp_neg_max;

	for (int32_t i = 0; i < n; i++)
		if ((float) margins[i] > vmax)
			vmax = (float) margins[i];
	exp_neg_max = expf(-vmax);
	for (int32_t i = 0; i < n; i++)
	{
		float		x = (float) margins[i];
		float		e;

		if (!skip_zero || x > 0.0000001f || x < -0.0000001f)
		{
			e = expf(x - vmax);
			sum += e;
		}
		else
			e = x * exp_neg_max;
		out[i] = e;
	}
	for (int32_t i = 0; i < n; i++)
		out[i] = (float) out[i] / sum;
}

/*
 * XGBoost's common::Sigmoid (src/common/math.h), in float.  -x is capped
 * at 88.7 so that expf stays finite: every margin below -88.7, -inf
 * included, gives 1 / (expf(88.7f) + 1) = 3.0e-39, not 0.  The cap is
 * std::min(-x, 88.7f), which keeps a NaN.  XGBoost also adds 1e-16f to the
 * denominator; that cannot change a float sum of at least 1, and is kept
 * only to follow its formula term for term.
 */
static float
XgbSigmoid(float x)
{
	float		v = 88.7f < -x ? 88.7f : -x;

	return 1.0f / (expf(v) + 1.0f + 1e-16f);
}

/*
 * One value through an element-wise transform, in float.  A float forest
 * with SIGMOID, EXP, EXP_DOUBLE or HINGE is an XGBoost model; each is its
 * PredTransform, as XGBoost 1.7 to 3.1 compute them: the sigmoid above;
 * expf for reg:gamma, reg:tweedie, count:poisson and survival:cox (expf or
 * std::exp of a float); exp in double for survival:aft (aft_obj.cu calls
 * exp() unqualified, the C library's double function).
 */
static double
TransformFloat(ForestTransform transform, float x)
{
	switch (transform)
	{
		case FOREST_TRANSFORM_SIGMOID:
			return XgbSigmoid(x);
		case FOREST_TRANSFORM_SIGMOID_OVA:
			return 1.0f / (1.0f + expf(-x));
		case FOREST_TRANSFORM_EXP:
			return expf(x);
		case FOREST_TRANSFORM_EXP_DOUBLE:
			return (float) exp((double) x);
		case FOREST_TRANSFORM_HINGE:
			return x > 0.0f ? 1.0f : 0.0f;
		case FOREST_TRANSFORM_LOG1P_EXP:
			return log1pf(expf(x));
		case FOREST_TRANSFORM_SIGNED_SQUARE:
			return (x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f)) * x * x;
		case FOREST_TRANSFORM_ONNX_LOGISTIC:
		case FOREST_TRANSFORM_ONNX_PROBIT:
			return TransformOnnx(transform, x);
		default:
			return x;
	}
}

/* One value through an element-wise transform, in double */
static double
TransformDouble(ForestTransform transform, double alpha, double x)
{
	switch (transform)
	{
		case FOREST_TRANSFORM_SIGMOID:
		case FOREST_TRANSFORM_SIGMOID_OVA:
			return 1.0 / (1.0 + exp(-alpha * x));
		case FOREST_TRANSFORM_EXP:
		case FOREST_TRANSFORM_EXP_DOUBLE:
			return exp(x);
		case FOREST_TRANSFORM_HINGE:
			return x > 0.0 ? 1.0 : 0.0;
		case FOREST_TRANSFORM_LOG1P_EXP:
			return log(1.0 + exp(x));	/* LightGBM's own formula, not log1p */
		case FOREST_TRANSFORM_SIGNED_SQUARE:
			return (x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0)) * x * x;
		case FOREST_TRANSFORM_ONNX_LOGISTIC:
		case FOREST_TRANSFORM_ONNX_PROBIT:
			return TransformOnnx(transform, (float) x);
		default:
			return x;
	}
}

/* Transform the num_groups margins of one row */
void
ForestTransformRow(const Forest *forest, const double *margins, double *out)
{
	int32_t		n = forest->num_groups;
	bool		f32 = forest->precision == FOREST_FLOAT32;

	if (forest->transform == FOREST_TRANSFORM_SOFTMAX)
	{
		if (f32)
			SoftmaxFloat(margins, out, n);
		else
			SoftmaxDouble(margins, out, n);
		return;
	}
	if (forest->transform == FOREST_TRANSFORM_ONNX_SOFTMAX ||
		forest->transform == FOREST_TRANSFORM_ONNX_SOFTMAX_ZERO)
	{
		SoftmaxOnnx(margins, out, n,
					forest->transform == FOREST_TRANSFORM_ONNX_SOFTMAX_ZERO);
		return;
	}
	for (int32_t g = 0; g < n; g++)
		out[g] = f32 ? TransformFloat(forest->transform, (float) margins[g])
			: TransformDouble(forest->transform, forest->sigmoid_alpha, margins[g]);
}

/* What the library's predict() returns for one row */
double
ForestPredictRow(const Forest *forest, const double *margins)
{
	if (forest->task == FOREST_TASK_MULTICLASS)
	{
		int32_t		best = 0;

		for (int32_t g = 1; g < forest->num_groups; g++)
			if (margins[g] > margins[best])
				best = g;
		return best;
	}
	if (forest->precision == FOREST_FLOAT32)
		return TransformFloat(forest->transform, (float) margins[0]);
	return TransformDouble(forest->transform, forest->sigmoid_alpha, margins[0]);
}

/*
 * Replace each of num_rows rows' margins by what predict() returns for it,
 * in place: margins[r] is then row r's prediction.  Row r's margins start
 * at r * num_groups >= r, so each row is read before anything is written
 * over it.
 */
void
ForestPredictRows(const Forest *forest, double *margins, int64_t num_rows)
{
	int32_t		groups = forest->num_groups;

	for (int64_t r = 0; r < num_rows; r++)
		margins[r] = ForestPredictRow(forest, margins + r * groups);
}

/*
 * The class a classifier's row is predicted to be, as the library's
 * scikit-learn interface says: the index predict() returns (multi-class),
 * or for a binary model class 1 when predict() is above 0.5 (XGBoost's
 * XGBClassifier.predict and LightGBM's argmax of {1 - p, p} agree: a tie
 * at 0.5 is class 0); -1 for a model that is no classifier
 */
int32_t
ForestClassOfRow(const Forest *forest, const double *margins)
{
	if (forest->task == FOREST_TASK_MULTICLASS)
		return (int32_t) ForestPredictRow(forest, margins);
	if (forest->task == FOREST_TASK_BINARY)
		return ForestPredictRow(forest, margins) > 0.5 ? 1 : 0;
	return -1;
}

/* Does the model produce class probabilities? */
bool
ForestHasProbabilities(const Forest *forest)
{
	return forest->task == FOREST_TASK_BINARY ||
		forest->task == FOREST_TASK_MULTICLASS;
}

/* Number of probabilities per row (0 when the model has none) */
int
ForestProbaWidth(const Forest *forest)
{
	if (forest->task == FOREST_TASK_BINARY)
		return 2;
	if (forest->task == FOREST_TASK_MULTICLASS)
		return forest->num_classes;
	return 0;
}

/* Doubles that one row's outputs need: its margins or its probabilities */
int
ForestOutputWidth(const Forest *forest)
{
	int			width = ForestProbaWidth(forest);

	return width > forest->num_groups ? width : forest->num_groups;
}

/* Class probabilities of one row (ForestProbaWidth values); returns how many were written */
int
ForestProbaRow(const Forest *forest, const double *margins, double *out)
{
	if (forest->task == FOREST_TASK_BINARY)
	{
		double		p = ForestPredictRow(forest, margins);

		out[0] = forest->precision == FOREST_FLOAT32 ? (double) (1.0f - (float) p) : 1.0 - p;
		out[1] = p;
		return 2;
	}
	if (forest->task == FOREST_TASK_MULTICLASS)
	{
		ForestTransformRow(forest, margins, out);
		return forest->num_groups;
	}
	return 0;
}
