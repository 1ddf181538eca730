// Element-wise activations; the numbers match enum class Activation in src/ops/activation.hpp.
float erf_approx(float x) {
  float a = abs(x);
  if (a < 0.5) {
    // Maclaurin series: exact to float precision on |x| < 0.5.
    float x2 = x * x;
    float p = 1.0 / 75600.0 * -1.0;
    p = p * x2 + 1.0 / 9360.0;
    p = p * x2 - 1.0 / 1320.0;
    p = p * x2 + 1.0 / 216.0;
    p = p * x2 - 1.0 / 42.0;
    p = p * x2 + 1.0 / 10.0;
    p = p * x2 - 1.0 / 3.0;
    p = p * x2 + 1.0;
    return 1.1283791670955126 * x * p;
  }
  // Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7).
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t +
                   0.254829592) * t * exp(-a * a);
  return x < 0.0 ? -y : y;
}

float activate(float v, uint op, float alpha, float beta) {
  switch (op) {
    case 0u: return v;
    case 1u: return max(v, 0.0);
    case 2u: return 1.0 / (1.0 + exp(-v));
    case 3u: return tanh(clamp(v, -15.0, 15.0));
    case 4u: return exp(v);
    case 5u: return log(v);
    case 6u: return sqrt(v);
    case 7u: return -v;
    case 8u: return abs(v);
    case 9u: return erf_approx(v);
    case 10u: return min(max(v, alpha), beta);
    case 11u: return v < 0.0 ? v * alpha : v;
    case 12u: return v < 0.0 ? alpha * (exp(v) - 1.0) : v;
    case 13u: return clamp(alpha * v + beta, 0.0, 1.0);
    case 14u: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case 15u: return 1.0 / v;
    case 16u: return floor(v);
    case 17u: return ceil(v);
    case 18u: return sin(v);
    case 19u: return cos(v);
    case 20u: return v > 20.0 ? v : log(1.0 + exp(v));
    case 21u: return v / (1.0 + abs(v));
    case 22u: return v <= 0.0 ? beta * alpha * (exp(v) - 1.0) : beta * v;
    case 23u: return roundEven(v);
    case 24u: return sign(v);
    case 25u: return max(0.0, v) + min(0.0, alpha * (exp(v / alpha) - 1.0));
    case 26u: return v > alpha ? v : 0.0;
  }
  return v;
}
