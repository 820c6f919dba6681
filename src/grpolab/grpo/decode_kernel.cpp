// The fused decode step behind grpolab.grpo.decode (CPU, float32): one call per generated
// token runs every Llama block of the model, instead of about thirty small tensor calls
// per block from Python.
//
// Why: at the tiny model's sizes (64 rows of width 128) each tensor call from Python costs
// a few microseconds of dispatch, and the glue between the matrix products (RMSNorm, the
// rotary rotation, the cache write, single-query attention) costs more than the products.
// Here the matrix products stay ATen's (at::mm / at::addmm, the same kernels as the Python
// path), the exponentials are ATen's vectorised exp and SiLU, and only the glue is written
// out as loops. The arithmetic is the block's own, so the result equals the Python path's
// to float rounding (tests/test_rollout.py checks the tokens and the hidden states).
//
// Compiled on first use by torch.utils.cpp_extension (grpolab/grpo/decode.py, `_kernel`).

#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void check_f32(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous(),
              name, " must be a contiguous float32 CPU tensor");
}

// LlamaRMSNorm in float32: y = (x * rsqrt(mean(x^2) + eps)) * w, row by row; x (n, D)
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  check_f32(x, "x");
  check_f32(w, "w");
  TORCH_CHECK(x.dim() == 2 && w.dim() == 1 && w.size(0) == x.size(1),
              "rms_norm takes x (n, D) and w (D)");
  auto out = at::empty_like(x);
  const int64_t n = x.size(0), D = x.size(1);
  const float* xp = x.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const float feps = static_cast<float>(eps);
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = xp + r * D;
      float* yr = op + r * D;
      float ss = 0.f;
#pragma omp simd reduction(+ : ss)
      for (int64_t i = 0; i < D; ++i) ss += xr[i] * xr[i];
      const float inv = 1.f / std::sqrt(ss / static_cast<float>(D) + feps);
      for (int64_t i = 0; i < D; ++i) yr[i] = (xr[i] * inv) * wp[i];
    }
  });
  return out;
}

// x·cos + rotate_half(x)·sin, with rotate_half's sign folded into `sin` (as in decode.py)
inline void rotate(const float* x, const float* c, const float* s, float* out, int64_t hd) {
  const int64_t half = hd / 2;
  for (int64_t i = 0; i < half; ++i) out[i] = x[i] * c[i] + x[i + half] * s[i];
  for (int64_t i = half; i < hd; ++i) out[i] = x[i] * c[i] + x[i - half] * s[i];
}

// One model's decode state for one rollout: its block weights and the preallocated caches.
struct Decoder {
  int64_t H, Hkv, hd;
  double eps;
  float scale;
  std::vector<at::Tensor> weights;  // 6 per layer: norm1, qkv (D, (H+2Hkv)·hd), o, norm2,
                                    // gate_up (D, 2I), down (I, D); each input-major
  std::vector<at::Tensor> keys;     // per layer (n, Hkv, L, hd)
  std::vector<at::Tensor> values;   // per layer (n, Hkv, L, hd)
  at::Tensor pad;                   // (n, L) additive mask: 0, or -inf on padded slots

  Decoder(int64_t H, int64_t Hkv, int64_t hd, double eps, std::vector<at::Tensor> weights,
          std::vector<at::Tensor> keys, std::vector<at::Tensor> values, at::Tensor pad)
      : H(H), Hkv(Hkv), hd(hd), eps(eps), scale(static_cast<float>(1.0 / std::sqrt(double(hd)))),
        weights(std::move(weights)), keys(std::move(keys)), values(std::move(values)),
        pad(std::move(pad)) {
    TORCH_CHECK(H % Hkv == 0 && hd % 2 == 0, "bad head layout");
    TORCH_CHECK(this->weights.size() == 6 * this->keys.size() &&
                    this->keys.size() == this->values.size(), "one weight set and cache per layer");
    for (const auto& t : this->weights) check_f32(t, "weights");
    for (const auto& t : this->keys) check_f32(t, "keys");
    for (const auto& t : this->values) check_f32(t, "values");
    check_f32(this->pad, "pad");
  }

  // Rotary positions on q and k, k and v written to slot `cur` of layer `li`'s cache, then
  // every query attends to slots 0..cur (the later slots are not written yet). qkv (n,
  // (H+2Hkv)·hd); cos/sin (n, hd), each row's angles. Returns (n, H·hd).
  at::Tensor attend(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                    int64_t li, int64_t cur) {
    const int64_t n = qkv.size(0), width = (H + 2 * Hkv) * hd, g = H / Hkv;
    const int64_t L = keys[li].size(2), S = cur + 1;
    TORCH_CHECK(cur >= 0 && cur < L, "slot out of range");
    TORCH_CHECK(qkv.dim() == 2 && qkv.size(1) == width, "qkv must be (n, (H + 2 Hkv) hd)");
    TORCH_CHECK(cos.size(0) == n && cos.size(1) == hd && sin.sizes() == cos.sizes(),
                "cos and sin must be (n, hd)");
    TORCH_CHECK(pad.size(0) == n && pad.size(1) == L, "pad must be (n, L)");
    TORCH_CHECK(keys[li].size(0) == n && keys[li].size(1) == Hkv && keys[li].size(3) == hd &&
                    values[li].sizes() == keys[li].sizes(),
                "caches must be (n, Hkv, L, hd)");
    auto out = at::empty({n, H * hd}, qkv.options());
    auto scores = at::empty({n, H, S}, qkv.options());
    const float* qp = qkv.data_ptr<float>();
    const float* cp = cos.data_ptr<float>();
    const float* sp = sin.data_ptr<float>();
    const float* mp = pad.data_ptr<float>();
    float* kp = keys[li].data_ptr<float>();
    float* vp = values[li].data_ptr<float>();
    float* op = out.data_ptr<float>();
    float* scp = scores.data_ptr<float>();
    // pass 1: rotate, write the cache slot, and the scores minus each row's max
    at::parallel_for(0, n, 4, [&](int64_t begin, int64_t end) {
      std::vector<float> q(hd);
      for (int64_t r = begin; r < end; ++r) {
        const float* row = qp + r * width;
        const float* c = cp + r * hd;
        const float* s = sp + r * hd;
        const float* m = mp + r * L;
        for (int64_t j = 0; j < Hkv; ++j) {
          float* kc = kp + (r * Hkv + j) * L * hd;
          float* vc = vp + (r * Hkv + j) * L * hd;
          rotate(row + (H + j) * hd, c, s, kc + cur * hd, hd);
          std::copy(row + (H + Hkv + j) * hd, row + (H + Hkv + j + 1) * hd, vc + cur * hd);
          for (int64_t hq = j * g; hq < (j + 1) * g; ++hq) {  // the query heads of kv head j
            rotate(row + hq * hd, c, s, q.data(), hd);
            float* srow = scp + (r * H + hq) * S;
            float mx = kNegInf;
            for (int64_t l = 0; l < S; ++l) {
              if (m[l] == kNegInf) {  // a padded prompt slot
                srow[l] = kNegInf;
                continue;
              }
              const float* kl = kc + l * hd;
              float d = 0.f;
#pragma omp simd reduction(+ : d)
              for (int64_t i = 0; i < hd; ++i) d += q[i] * kl[i];
              srow[l] = m[l] + scale * d;
              mx = std::max(mx, srow[l]);
            }
            // the slot just written is never padding, so mx is finite
            for (int64_t l = 0; l < S; ++l) srow[l] -= mx;
          }
        }
      }
    });
    scores.exp_();  // ATen's vectorised exp: padded slots become exactly 0
    // pass 2: normalise, then weight the values
    at::parallel_for(0, n, 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t hq = 0; hq < H; ++hq) {
          const float* srow = scp + (r * H + hq) * S;
          const float* vc = vp + (r * Hkv + hq / g) * L * hd;
          float total = 0.f;
          for (int64_t l = 0; l < S; ++l) total += srow[l];
          float* o = op + (r * H + hq) * hd;
          std::fill(o, o + hd, 0.f);
          for (int64_t l = 0; l < S; ++l) {
            const float p = srow[l] / total;
            if (p == 0.f) continue;
            const float* vl = vc + l * hd;
            for (int64_t i = 0; i < hd; ++i) o[i] += p * vl[i];
          }
        }
      }
    });
    return out;
  }

  // One generated token through every block: x (n, D) the embedded tokens, cos/sin (n, hd)
  // their rotary angles, `cur` the cache slot they take. Returns the residual stream
  // (before the final norm).
  at::Tensor step(at::Tensor x, const at::Tensor& cos, const at::Tensor& sin, int64_t cur) {
    check_f32(x, "x");
    check_f32(cos, "cos");
    check_f32(sin, "sin");
    for (size_t li = 0; li < keys.size(); ++li) {
      const at::Tensor* w = &weights[6 * li];
      auto qkv = at::mm(rms_norm(x, w[0], eps), w[1]);
      x = at::addmm(x, attend(qkv, cos, sin, static_cast<int64_t>(li), cur), w[2]);
      auto gate_up = at::mm(rms_norm(x, w[3], eps), w[4]);
      const int64_t I = gate_up.size(1) / 2;
      x = at::addmm(x, at::silu(gate_up.narrow(1, 0, I)).mul_(gate_up.narrow(1, I, I)), w[5]);
    }
    return x;
  }
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "grpolab's fused Llama decode step (see grpolab/grpo/decode.py)";
  m.def("rms_norm", &rms_norm, "LlamaRMSNorm of a (n, D) float32 tensor");
  pybind11::class_<Decoder>(m, "Decoder")
      .def(pybind11::init<int64_t, int64_t, int64_t, double, std::vector<at::Tensor>,
                          std::vector<at::Tensor>, std::vector<at::Tensor>, at::Tensor>())
      .def("attend", &Decoder::attend)
      .def("step", &Decoder::step);
}
