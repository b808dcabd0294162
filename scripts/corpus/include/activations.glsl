// activations.glsl - scalar activation functions, their derivatives and the
// gated (GLU) combinations. Every function has the signature
//   float act_<name>(float x, float p1, float p2)
// so that kernels can pick one with KC_CAT(act_, OP).
#ifndef ACTIVATIONS_GLSL
#define ACTIVATIONS_GLSL
#include "types.glsl"

#define GELU_COEF_A 0.044715
#define GELU_QUICK_COEF (-1.702)
#define SQRT_2_OVER_PI 0.79788456080286535587989211986876
#define SQRT_2_INV 0.70710678118654752440084436210484

// erf, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
float kc_erf(float x) {
  const float a1 = 0.254829592, a2 = -0.284496736, a3 = 1.421413741;
  const float a4 = -1.453152027, a5 = 1.061405429, pp = 0.3275911;
  const float s = sign(x);
  const float ax = abs(x);
  const float t = 1.0 / (1.0 + pp * ax);
  const float y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
  return s * y;
}

// tanh that does not overflow exp() for large |x|.
float kc_tanh(float x) {
  const float c = clamp(x, -15.0, 15.0);
  const float e = exp(2.0 * c);
  return (e - 1.0) / (e + 1.0);
}

float kc_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

float kc_softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

float act_abs(float x, float p1, float p2) { return abs(x); }
float act_neg(float x, float p1, float p2) { return -x; }
float act_sqr(float x, float p1, float p2) { return x * x; }
float act_sqrt(float x, float p1, float p2) { return sqrt(max(x, 0.0)); }
float act_sin(float x, float p1, float p2) { return sin(x); }
float act_cos(float x, float p1, float p2) { return cos(x); }
float act_log(float x, float p1, float p2) { return log(x); }
float act_exp(float x, float p1, float p2) { return exp(x); }
float act_expm1(float x, float p1, float p2) { return abs(x) < 1e-5 ? x + 0.5 * x * x : exp(x) - 1.0; }
float act_tanh(float x, float p1, float p2) { return kc_tanh(x); }
float act_sigmoid(float x, float p1, float p2) { return kc_sigmoid(x); }
float act_log_sigmoid(float x, float p1, float p2) { return -kc_softplus(-x); }
float act_relu(float x, float p1, float p2) { return max(x, 0.0); }
float act_leaky_relu(float x, float p1, float p2) { return max(x, 0.0) + min(x, 0.0) * p1; }
float act_gelu(float x, float p1, float p2) {
  return 0.5 * x * (1.0 + kc_tanh(SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)));
}
float act_gelu_erf(float x, float p1, float p2) { return 0.5 * x * (1.0 + kc_erf(x * SQRT_2_INV)); }
float act_gelu_quick(float x, float p1, float p2) { return x * (1.0 / (1.0 + exp(GELU_QUICK_COEF * x))); }
float act_silu(float x, float p1, float p2) { return x / (1.0 + exp(-x)); }
float act_hardswish(float x, float p1, float p2) { return x * min(1.0, max(0.0, (x + 3.0) / 6.0)); }
float act_hardsigmoid(float x, float p1, float p2) { return min(1.0, max(0.0, (x + 3.0) / 6.0)); }
float act_elu(float x, float p1, float p2) { return x > 0.0 ? x : exp(x) - 1.0; }
float act_selu(float x, float p1, float p2) {
  const float alpha = 1.6732632423543772, scale = 1.0507009873554805;
  return scale * (x > 0.0 ? x : alpha * (exp(x) - 1.0));
}
float act_softplus(float x, float p1, float p2) { return kc_softplus(x); }
float act_softsign(float x, float p1, float p2) { return x / (1.0 + abs(x)); }
float act_mish(float x, float p1, float p2) { return x * kc_tanh(kc_softplus(x)); }
float act_step(float x, float p1, float p2) { return x > 0.0 ? 1.0 : 0.0; }
float act_floor(float x, float p1, float p2) { return floor(x); }
float act_ceil(float x, float p1, float p2) { return ceil(x); }
float act_round(float x, float p1, float p2) { return roundEven(x); }
float act_trunc(float x, float p1, float p2) { return trunc(x); }
float act_sgn(float x, float p1, float p2) { return sign(x); }

// Derivatives: dx = act_back_<name>(dy, x).
float act_back_silu(float dy, float x) {
  const float s = kc_sigmoid(x);
  return dy * s * (1.0 + x * (1.0 - s));
}
float act_back_gelu(float dy, float x) {
  const float x2 = x * x;
  const float u = SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x2);
  const float t = kc_tanh(u);
  const float du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_COEF_A * x2);
  return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
}
float act_back_relu(float dy, float x) { return x > 0.0 ? dy : 0.0; }

// Gated linear units: d = glu_<name>(gate, up).
float glu_swiglu(float a, float b, float alpha, float limit) { return act_silu(a, 0.0, 0.0) * b; }
float glu_geglu(float a, float b, float alpha, float limit) { return act_gelu(a, 0.0, 0.0) * b; }
float glu_geglu_erf(float a, float b, float alpha, float limit) { return act_gelu_erf(a, 0.0, 0.0) * b; }
float glu_geglu_quick(float a, float b, float alpha, float limit) { return act_gelu_quick(a, 0.0, 0.0) * b; }
float glu_reglu(float a, float b, float alpha, float limit) { return max(a, 0.0) * b; }
float glu_swiglu_oai(float a, float b, float alpha, float limit) {
  const float x = min(a, limit);
  const float y = clamp(b, -limit, limit);
  return x / (1.0 + exp(-alpha * x)) * (y + 1.0);
}

#endif  // ACTIVATIONS_GLSL
