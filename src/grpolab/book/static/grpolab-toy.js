/* grpolab toy GRPO playground: the JavaScript port of grpolab.toy, plus the page that drives it.
 *
 * No libraries, no network. The engine (everything up to "The page") mirrors
 * src/grpolab/toy.py line for line: the same counter-based generator (mulberry32's mixer),
 * the same datasets, the same GRPO step. tests/test_toy_js.py runs it under Node and
 * compares it with the Python. In a browser, it mounts every <div class="grpolab-toy">
 * and retrains on every control change.
 */
(function (root) {
  "use strict";

  // ------------------------------------------------------------------------------------
  // Random numbers: u(seed, n) = H(H(n ^ k1) ^ k2) / 2^32 (toy.uniforms)
  // ------------------------------------------------------------------------------------
  function mix32(x) {
    var t = (x + 0x6D2B79F5) | 0;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  function seedKeys(seed) { return [mix32(seed >>> 0), mix32((seed ^ 0x9E3779B9) >>> 0)]; }
  function uniform(keys, n) { return mix32((mix32((n ^ keys[0]) >>> 0) ^ keys[1]) >>> 0) / 4294967296; }

  // ------------------------------------------------------------------------------------
  // Datasets (toy.beta_dataset, toy.empirical_dataset)
  // ------------------------------------------------------------------------------------
  var P_FLOOR = 1e-4;
  var BUCKET_EDGES = [0.0, 0.05, 0.2, 0.5, 1.0];
  var BUCKET_LABELS = ["p\u2080 < 0.05", "0.05 \u2264 p\u2080 < 0.2", "0.2 \u2264 p\u2080 < 0.5", "p\u2080 \u2265 0.5"];
  var LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7];
  function lgamma(x) {
    if (x < 0.5) { return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x); }
    x -= 1;
    var a = LANCZOS[0], t = x + 7.5;
    for (var i = 1; i < 9; i++) { a += LANCZOS[i] / (x + i); }
    return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
  }
  function betacf(a, b, x) {
    var tiny = 1e-300, qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    d = 1 / (Math.abs(d) < tiny ? tiny : d);
    var h = d;
    for (var m = 1; m <= 300; m++) {
      var m2 = 2 * m, aa = m * (b - m) * x / ((qam + m2) * (a + m2));
      d = 1 + aa * d; d = 1 / (Math.abs(d) < tiny ? tiny : d);
      c = 1 + aa / c; c = Math.abs(c) < tiny ? tiny : c;
      h *= d * c;
      aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
      d = 1 + aa * d; d = 1 / (Math.abs(d) < tiny ? tiny : d);
      c = 1 + aa / c; c = Math.abs(c) < tiny ? tiny : c;
      var delta = d * c;
      h *= delta;
      if (Math.abs(delta - 1) < 1e-15) { break; }
    }
    return h;
  }
  function betainc(a, b, x) {
    if (x <= 0) { return 0; }
    if (x >= 1) { return 1; }
    var front = Math.exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * Math.log(x) + b * Math.log1p(-x));
    if (x < (a + 1) / (a + b + 2)) { return front * betacf(a, b, x) / a; }
    return 1 - front * betacf(b, a, 1 - x) / b;
  }
  function betaQuantile(q, a, b) {
    var lo = 0, hi = 1;
    for (var i = 0; i < 100; i++) {
      var mid = 0.5 * (lo + hi);
      if (betainc(a, b, mid) < q) { lo = mid; } else { hi = mid; }
    }
    return 0.5 * (lo + hi);
  }
  function makeDataset(passRates, name) {
    var p = passRates.map(function (v) { return Math.min(Math.max(v, P_FLOOR), 1 - P_FLOOR); });
    var logits = p.map(function (v) { return Math.log(v) - Math.log1p(-v); });
    var buckets = p.map(function (v) {
      var k = 0;
      while (k + 1 < BUCKET_EDGES.length && v >= BUCKET_EDGES[k + 1]) { k++; }
      return Math.min(k, BUCKET_LABELS.length - 1);
    });
    return {passRates: p, logits: logits, buckets: buckets, name: name};
  }
  function betaDataset(a, b, n) {
    var p = [];
    for (var j = 0; j < n; j++) { p.push(betaQuantile((j + 0.5) / n, a, b)); }
    return makeDataset(p, "Beta(" + a + ", " + b + ")");
  }
  function empiricalDataset(successes, samples, name) {
    return makeDataset(successes.map(function (k, j) {
      var n = Array.isArray(samples) ? samples[j] : samples;
      return (k + 0.5) / (n + 1);
    }), name || "measured");
  }

  // ------------------------------------------------------------------------------------
  // Configuration (toy.ToyConfig)
  // ------------------------------------------------------------------------------------
  var DEFAULTS = {num_generations: 8, mode: "budget", budget: 64, prompts_per_step: 8, steps: 200,
    learning_rate: 0.05, optimizer: "adam", scale_rewards: "group", baseline: "mean", loss_type: "grpo",
    wrong_length: 1.0, beta: 0.0, temperature: 1.0, dynamic_sampling: false, max_batches: 3,
    filter_low: 0.0, filter_high: 1.0, transfer: 0.25};
  function config(overrides) {
    var c = {};
    for (var k in DEFAULTS) { c[k] = DEFAULTS[k]; }
    for (var o in overrides) {
      if (!(o in DEFAULTS)) { throw new Error("unknown toy option " + o); }
      c[o] = overrides[o];
    }
    if (!(c.num_generations >= 2)) { throw new Error("num_generations must be an integer >= 2"); }
    if (c.mode === "budget" && c.budget < c.num_generations) {
      throw new Error("budget " + c.budget + " is smaller than one group of G = " + c.num_generations);
    }
    return c;
  }
  function prompts(c) { return c.mode === "budget" ? Math.floor(c.budget / c.num_generations) : c.prompts_per_step; }

  // ------------------------------------------------------------------------------------
  // One GRPO run per seed (toy.train)
  // ------------------------------------------------------------------------------------
  var ADV_EPS = 1e-4, B1 = 0.9, B2 = 0.999, ADAM_EPS = 1e-8;
  function sigmoid(z) { return 1 / (1 + Math.exp(-z)); }

  // Advantages of one batch (B groups of G, prompt-major) in place (grpolab.advantages).
  function advantages(r, B, G, c, out) {
    var g, i, o, loo = c.baseline !== "mean", byGroup = c.scale_rewards === "group";
    for (g = 0; g < B; g++) {
      o = g * G;
      var total = 0;
      for (i = 0; i < G; i++) { total += r[o + i]; }
      var mean = total / G;
      for (i = 0; i < G; i++) { out[o + i] = loo ? r[o + i] - (total - r[o + i]) / (G - 1) : r[o + i] - mean; }
      if (byGroup) {
        var ss = 0;
        for (i = 0; i < G; i++) { var dv = r[o + i] - mean; ss += dv * dv; }
        var sd = Math.sqrt(ss / (G - 1));
        for (i = 0; i < G; i++) { out[o + i] = out[o + i] / (sd + ADV_EPS); }
      }
    }
    if (c.scale_rewards === "batch") {
      var n = B * G, tot = 0, k;
      for (k = 0; k < n; k++) { tot += r[k]; }
      var bm = tot / n, bss = 0;
      for (k = 0; k < n; k++) { var e = r[k] - bm; bss += e * e; }
      var bsd = n > 1 ? Math.sqrt(bss / (n - 1)) : 0;
      for (k = 0; k < n; k++) { out[k] = out[k] / (bsd + ADV_EPS); }
    }
  }

  // x^G for an integer G >= 1 by repeated squaring (a few multiplications instead of exp/log;
  // agrees with Python's exp(G log x) to about 1e-15 relative).
  function ipow(x, G) {
    var out = 1;
    while (G > 0) { if (G & 1) { out *= x; } x *= x; G >>= 1; }
    return out;
  }

  function train(ds, c, seeds) {
    var S = seeds.length, N = ds.passRates.length, G = c.num_generations, B = prompts(c);
    var M = c.dynamic_sampling ? c.max_batches : 1, steps = c.steps;
    var eligible = [];
    for (var j = 0; j < N; j++) {
      if (ds.passRates[j] >= c.filter_low && ds.passRates[j] <= c.filter_high) { eligible.push(j); }
    }
    if (!eligible.length) { throw new Error("the difficulty filter keeps no prompt"); }
    var K = BUCKET_LABELS.length, bucketCount = new Float64Array(K);
    ds.buckets.forEach(function (k) { bucketCount[k]++; });
    var res = {S: S, steps: steps, B: B, G: G,
      pass_rate: new Float64Array(S * (steps + 1)), completions: new Float64Array(S * (steps + 1)),
      zero_variance_observed: new Float64Array(S * steps), zero_variance_predicted: new Float64Array(S * steps),
      bucket_pass_rate: new Float64Array(S * (steps + 1) * K), theta: new Float64Array(S * (N + 1))};
    var opts = {N: N, G: G, B: B, M: M, K: K, steps: steps, T: c.temperature, alpha: c.transfer,
      lr: c.learning_rate, beta: c.beta, wrongLen: c.wrong_length, lmax: Math.max(1, c.wrong_length),
      lossCode: c.loss_type === "grpo" ? 0 : c.loss_type === "dapo" ? 1 : 2,
      useSgd: c.optimizer === "sgd", cfg: c, logits: Float64Array.from(ds.logits),
      bucketOf: Int32Array.from(ds.buckets), bucketCount: bucketCount, eligible: Int32Array.from(eligible)};
    for (var s = 0; s < S; s++) { trainSeed(opts, seedKeys(seeds[s]), s, res); }
    return res;
  }

  // One seed's run; written without closures so that V8 keeps its locals in registers.
  function trainSeed(o, keys, s, res) {
    var N = o.N, G = o.G, B = o.B, M = o.M, K = o.K, steps = o.steps, T = o.T, alpha = o.alpha;
    var lr = o.lr, beta = o.beta, wrongLen = o.wrongLen, lmax = o.lmax, lossCode = o.lossCode;
    var logits = o.logits, bucketOf = o.bucketOf, bucketCount = o.bucketCount, eligible = o.eligible;
    var nElig = eligible.length, k1 = keys[0], k2 = keys[1];
    var D = M * B * (G + 1), MB = M * B, n = B * G, T1 = steps + 1;
    var theta = new Float64Array(N + 1), m = new Float64Array(N + 1), v = new Float64Array(N + 1);
    var grad = new Float64Array(N + 1), p = new Float64Array(N), z = new Float64Array(N);
    var idxAll = new Int32Array(MB), yAll = new Float64Array(MB * G), inf = new Uint8Array(MB);
    var idx = new Int32Array(B), y = new Float64Array(n), adv = new Float64Array(n), order = new Int32Array(B);
    var bsum = new Float64Array(K);
    var done = 0, t, g, i, j, k, tot, x, hsh;
    for (t = 0; t <= steps; t++) {
      // the policy and what it scores now (toy.train's record)
      tot = 0;
      for (k = 0; k < K; k++) { bsum[k] = 0; }
      for (j = 0; j < N; j++) {
        z[j] = alpha * theta[0] + theta[j + 1] + logits[j];
        p[j] = 1 / (1 + Math.exp(-(z[j] / T)));
        tot += p[j]; bsum[bucketOf[j]] += p[j];
      }
      res.pass_rate[s * T1 + t] = tot / N;
      for (k = 0; k < K; k++) {
        res.bucket_pass_rate[(s * T1 + t) * K + k] = bucketCount[k] ? bsum[k] / bucketCount[k] : NaN;
      }
      if (t === steps) { break; }
      var base = t * D;
      for (g = 0; g < MB; g++) {
        x = base + g;
        hsh = mix32((mix32((x ^ k1) >>> 0) ^ k2) >>> 0);
        idxAll[g] = eligible[Math.floor(hsh / 4294967296 * nElig)];
      }
      var nInf = 0, zeroVarFirst = 0, predFirst = 0, fullAt = -1;
      for (g = 0; g < MB; g++) {
        var pg = p[idxAll[g]], kk = 0;
        for (i = 0; i < G; i++) {
          x = base + MB + g * G + i;
          hsh = mix32((mix32((x ^ k1) >>> 0) ^ k2) >>> 0);
          var yy = hsh / 4294967296 < pg ? 1 : 0;
          yAll[g * G + i] = yy; kk += yy;
        }
        inf[g] = (kk > 0 && kk < G) ? 1 : 0;
        if (inf[g]) { nInf++; if (nInf === B && fullAt < 0) { fullAt = g; } }
        if (g < B) {
          zeroVarFirst += inf[g] ? 0 : 1;
          predFirst += ipow(pg, G) + ipow(1 - pg, G);
        }
      }
      res.zero_variance_observed[s * steps + t] = 1 - (B - zeroVarFirst) / B;
      res.zero_variance_predicted[s * steps + t] = predFirst / B;
      var rounds = 1;
      if (M > 1) {
        rounds = fullAt >= 0 ? Math.floor(fullAt / B) + 1 : M;
        var q = 0;
        for (g = 0; g < MB && q < B; g++) { if (inf[g]) { order[q++] = g; } }
        for (g = 0; g < MB && q < B; g++) { if (!inf[g]) { order[q++] = g; } }
      } else {
        for (g = 0; g < B; g++) { order[g] = g; }
      }
      done += rounds * B * G;
      res.completions[s * T1 + t + 1] = done;
      for (g = 0; g < B; g++) {
        idx[g] = idxAll[order[g]];
        for (i = 0; i < G; i++) { y[g * G + i] = yAll[order[g] * G + i]; }
      }
      advantages(y, B, G, o.cfg, adv);
      var totalLen = 0;
      if (lossCode === 1) { for (i = 0; i < n; i++) { totalLen += y[i] > 0 ? 1 : wrongLen; } }
      for (j = 0; j <= N; j++) { grad[j] = 0; }
      var shared = 0;
      for (g = 0; g < B; g++) {
        var pj = p[idx[g]], gg = 0;
        for (i = 0; i < G; i++) {
          var yi = y[g * G + i], w;
          if (lossCode === 0) { w = 1 / (n * (yi > 0 ? 1 : wrongLen)); }
          else if (lossCode === 1) { w = 1 / totalLen; }
          else { w = 1 / (n * lmax); }
          gg += w * adv[g * G + i] * ((yi - pj) / T);
        }
        if (beta > 0) {
          var klg = pj * (1 - pj) / T * ((z[idx[g]] - logits[idx[g]]) / T);
          gg = gg - beta * klg / B;
        }
        shared += gg;
        grad[idx[g] + 1] += gg;
      }
      grad[0] = alpha * shared;
      if (o.useSgd) {
        for (j = 0; j <= N; j++) { theta[j] = theta[j] + lr * grad[j]; }
      } else {
        var c1 = 1 - Math.pow(B1, t + 1), c2 = 1 - Math.pow(B2, t + 1);
        for (j = 0; j <= N; j++) {
          m[j] = B1 * m[j] + (1 - B1) * grad[j];
          v[j] = B2 * v[j] + (1 - B2) * grad[j] * grad[j];
          theta[j] = theta[j] + lr * (m[j] / c1) / (Math.sqrt(v[j] / c2) + ADAM_EPS);
        }
      }
    }
    for (j = 0; j <= N; j++) { res.theta[s * (N + 1) + j] = theta[j]; }
  }

  // ------------------------------------------------------------------------------------
  // Bands and G* (toy.t_critical_975, toy.summarize, toy.exact_gradient_mse, toy.fit_mse_constants)
  // ------------------------------------------------------------------------------------
  var T975 = [12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851,
    2.364624252, 2.306004135, 2.262157163, 2.228138852];
  function tCritical975(df) {
    if (df <= T975.length) { return T975[df - 1]; }
    var zc = 1.959963985;
    return zc + (Math.pow(zc, 3) + zc) / (4 * df) + (5 * Math.pow(zc, 5) + 16 * Math.pow(zc, 3) + 3 * zc) / (96 * df * df) +
      (3 * Math.pow(zc, 7) + 19 * Math.pow(zc, 5) + 17 * Math.pow(zc, 3) - 15 * zc) / (384 * df * df * df);
  }
  // mean and 95% t half-width over seeds of arr[s * width + col]
  function band(arr, S, width, col, stride, offset) {
    stride = stride || 1; offset = offset || 0;
    var sum = 0, s, x;
    for (s = 0; s < S; s++) { sum += arr[(s * width + col) * stride + offset]; }
    var mean = sum / S, ss = 0;
    for (s = 0; s < S; s++) { x = arr[(s * width + col) * stride + offset] - mean; ss += x * x; }
    var half = S > 1 ? tCritical975(S - 1) * Math.sqrt(ss / (S - 1)) / Math.sqrt(S) : 0;
    return [mean, half];
  }
  // The first-step gradient's MSE and the squared norm of its mean (toy.exact_gradient_mse).
  function exactGradient(ds, c, B, G) {
    if (c.scale_rewards === "batch" || c.loss_type === "dapo") { return null; }
    var N = ds.passRates.length, T = c.temperature, n = B * G, lmax = Math.max(1, c.wrong_length);
    var a = new Float64Array(G + 1), cc = new Float64Array(G + 1), r = new Float64Array(G), A = new Float64Array(G);
    var k, i, j;
    var cg = {baseline: c.baseline, scale_rewards: c.scale_rewards};
    for (k = 0; k <= G; k++) {
      for (i = 0; i < G; i++) { r[i] = i < k ? 1 : 0; }
      advantages(r, 1, G, cg, A);
      for (i = 0; i < G; i++) {
        var len = r[i] > 0 ? 1 : c.wrong_length;
        var w = c.loss_type === "grpo" ? 1 / (n * len) : 1 / (n * lmax);
        a[k] += w * A[i] * r[i]; cc[k] += w * A[i];
      }
    }
    var logc = [];
    for (k = 0; k <= G; k++) { logc.push(lgamma(G + 1) - lgamma(k + 1) - lgamma(G - k + 1)); }
    var sm1 = 0, sm2 = 0, per = 0, own = 0;
    for (j = 0; j < N; j++) {
      var p = sigmoid(ds.logits[j] / T), m1 = 0, m2 = 0;
      for (k = 0; k <= G; k++) {
        var lp = logc[k] + (k > 0 ? k * Math.log(p) : 0) + (k < G ? (G - k) * Math.log1p(-p) : 0);
        var pmf = Math.exp(lp), g = (a[k] - p * cc[k]) / T;
        m1 += pmf * g; m2 += pmf * g * g;
      }
      sm1 += m1; sm2 += m2; per += m2 / N - m1 * m1 / (N * N); own += (B * m1 / N) * (B * m1 / N);
    }
    var shared = c.transfer * c.transfer * (sm2 / N - (sm1 / N) * (sm1 / N));
    var sharedMean = c.transfer * B * sm1 / N;
    return {mse: B * (shared + per), signal: sharedMean * sharedMean + own};
  }
  function exactGradientMse(ds, c, B, G) {
    var e = exactGradient(ds, c, B, G);
    return e === null ? null : e.mse;
  }
  var FIT_B = [2, 8], FIT_G = [2, 3, 4, 6, 8, 16, 32];
  // Solve the k×k system A x = b by Gaussian elimination with partial pivoting.
  function solve(A, b) {
    var k = b.length, M = A.map(function (row, i) { return row.concat([b[i]]); }), i, j, r;
    for (i = 0; i < k; i++) {
      var piv = i;
      for (r = i + 1; r < k; r++) { if (Math.abs(M[r][i]) > Math.abs(M[piv][i])) { piv = r; } }
      var tmp = M[i]; M[i] = M[piv]; M[piv] = tmp;
      for (r = i + 1; r < k; r++) {
        var f = M[r][i] / M[i][i];
        for (j = i; j <= k; j++) { M[r][j] -= f * M[i][j]; }
      }
    }
    var x = new Array(k).fill(0);
    for (i = k - 1; i >= 0; i--) {
      var acc = M[i][k];
      for (j = i + 1; j < k; j++) { acc -= M[i][j] * x[j]; }
      x[i] = acc / M[i][i];
    }
    return x;
  }
  var SUBSETS = [[0, 1, 2], [0, 1], [0, 2], [1, 2], [0], [1], [2]];
  // Non-negative least squares in relative error over every subset (toy.fit_mse_constants).
  function fitMseConstants(rows) {
    var best = null, bestErr = Infinity;
    SUBSETS.forEach(function (cols) {
      var A = cols.map(function (a) { return cols.map(function (b) {
        return rows.reduce(function (acc, r) { return acc + r[a] * r[b]; }, 0); }); });
      var rhs = cols.map(function (a) { return rows.reduce(function (acc, r) { return acc + r[a] * r[3]; }, 0); });
      var sol = solve(A, rhs);
      if (sol.some(function (v) { return !(v >= 0); })) { return; }
      var c = [0, 0, 0];
      cols.forEach(function (col, i) { c[col] = sol[i]; });
      var err = rows.reduce(function (acc, r) { var e = r[0] * c[0] + r[1] * c[1] + r[2] * c[2] - r[3]; return acc + e * e; }, 0);
      if (err < bestErr - 1e-15) { best = c; bestErr = err; }
    });
    return best;
  }
  // G* = 1 + sqrt(c3/c1) on the unbiased estimator (toy.predicted_optimal_group_size): the
  // exact model MSE = c1/B + c2/(BG) + c3/(BG(G-1)) fitted under c3 >= c1 + |grad J|^2, as
  // c3 = c1 + signal + d with (c1, c2, d) >= 0 on relative residuals (advise.fit_noise_constants).
  function fitGStar(ds, c0) {
    var c = {};
    for (var key in c0) { c[key] = c0[key]; }
    c.baseline = "leave_one_out"; c.scale_rewards = "none"; c.loss_type = "grpo"; c.wrong_length = 1;
    var rows = [], signal = null;
    for (var bi = 0; bi < FIT_B.length; bi++) {
      for (var gi = 0; gi < FIT_G.length; gi++) {
        var B = FIT_B[bi], G = FIT_G[gi], e = exactGradient(ds, c, B, G), mse = e.mse;
        if (signal === null) { signal = Math.max(e.signal, 0); }
        var last = 1 / (B * G * (G - 1));
        rows.push([(1 / B + last) / mse, 1 / (B * G) / mse, last / mse, 1 - signal * last / mse]);
      }
    }
    var x = fitMseConstants(rows);
    if (!x || !(x[0] > 0)) { return {c: [NaN, NaN, NaN], G_star: NaN}; }
    var cs = [x[0], x[1], x[0] + signal + x[2]];
    return {c: cs, G_star: 1 + Math.sqrt(cs[2] / cs[0])};
  }

  // ------------------------------------------------------------------------------------
  // Page states in the URL (grpolab.book.playground.parse_state / encode_state)
  // ------------------------------------------------------------------------------------
  var G_CHOICES = [2, 3, 4, 6, 8, 12, 16, 24, 32, 64];
  var STATE_DEFAULTS = {G: [2, 4, 8, 16, 32], dataset: "beta", a: 1, b: 2, n_prompts: 64, budget: 64,
    prompts_per_step: 8, mode: "budget", learning_rate: 0.05, optimizer: "adam", steps: 200, seeds: 50,
    scale_rewards: "group", baseline: "mean", loss_type: "grpo", dynamic_sampling: "0", temperature: 1,
    transfer: 0.25, beta: 0, wrong_length: 1, filter_low: 0, filter_high: 1, max_batches: 3,
    x_axis: "completions"};
  // A URL fragment "G=2,4&a=0.3" as {key: string} (playground.parse_state reads it in Python).
  function parseFragment(fragment) {
    var out = {}, hsh = (fragment || "").replace(/^#/, "");
    if (!hsh) { return out; }
    hsh.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) { out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1)); }
    });
    return out;
  }
  function encodeState(st) {
    var parts = [];
    for (var k in STATE_DEFAULTS) {
      var v = k === "G" ? st.G.join(",") : String(st[k]);
      var d = k === "G" ? STATE_DEFAULTS.G.join(",") : String(STATE_DEFAULTS[k]);
      if (v !== d) { parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(v)); }
    }
    return parts.join("&");
  }
  function decodeState(obj) {
    var st = {};
    for (var k in STATE_DEFAULTS) { st[k] = k === "G" ? STATE_DEFAULTS.G.slice() : STATE_DEFAULTS[k]; }
    for (var key in obj) {
      if (!(key in STATE_DEFAULTS) || obj[key] === "") { continue; }
      if (key === "G") {
        var gs = obj.G.split(",").map(Number).filter(function (g) { return G_CHOICES.indexOf(g) >= 0; });
        if (gs.length) { st.G = gs.sort(function (x, y) { return x - y; }); }
      } else if (typeof STATE_DEFAULTS[key] === "number") {
        var num = Number(obj[key]);
        if (isFinite(num)) { st[key] = num; }
      } else { st[key] = String(obj[key]); }
    }
    return st;
  }

  // The controls' values (the URL may ask for others: clampState snaps them to these).
  var SLIDERS = [
    ["budget", "completions per step (budget mode)", [16, 32, 48, 64, 96, 128, 192, 256, 384, 512]],
    ["prompts_per_step", "prompts per step B (prompts mode)", [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64]],
    ["a", "Beta prior a", [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 8]],
    ["b", "Beta prior b", [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 8]],
    ["learning_rate", "learning rate", [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20]],
    ["steps", "steps", [25, 50, 100, 150, 200, 300, 400, 600]],
    ["seeds", "seeds", [2, 5, 10, 20, 50, 100, 200]],
    ["temperature", "temperature T", [0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2]],
    ["transfer", "transfer \u03b1 (shared parameter)", [0, 0.05, 0.1, 0.25, 0.5, 1]],
    ["beta", "KL weight \u03b2", [0, 0.01, 0.04, 0.1, 0.3, 1]],
    ["wrong_length", "length of a wrong completion", [0.25, 0.5, 1, 2, 4]],
    ["filter_low", "train only on p\u2080 \u2265", [0, 0.01, 0.02, 0.05, 0.1, 0.2]],
    ["filter_high", "train only on p\u2080 \u2264", [0.8, 0.9, 0.95, 0.99, 1]],
    ["max_batches", "dynamic sampling: max rounds", [1, 2, 3, 5, 10]]];
  var SELECTS = [
    ["dataset", "difficulty", [["beta", "Beta(a, b) prior"], ["smollm2", "SmolLM2 pass rates (labs/results)"]]],
    ["mode", "batch", [["budget", "fixed budget: B = \u230abudget / G\u230b"], ["prompts", "fixed prompts per step B"]]],
    ["optimizer", "optimizer", [["adam", "Adam"], ["sgd", "SGD"]]],
    ["scale_rewards", "scale_rewards", [["group", "group (GRPO)"], ["batch", "batch"], ["none", "none (Dr. GRPO)"]]],
    ["baseline", "baseline", [["mean", "group mean (GRPO)"], ["leave_one_out", "leave-one-out (RLOO)"]]],
    ["loss_type", "loss_type", [["grpo", "grpo"], ["dapo", "dapo"], ["dr_grpo", "dr_grpo"]]],
    ["dynamic_sampling", "dynamic sampling", [["0", "off"], ["1", "on (DAPO)"]]],
    ["x_axis", "learning curves against", [["completions", "completions generated"], ["steps", "optimizer steps"]]]];
  // The Beta prior's number of prompts has no control; a URL may set it within these bounds
  // (training time grows with it: 5000 prompts froze a tab for seconds).
  var N_PROMPTS_RANGE = [4, 512];

  function shortNum(v) { return String(Number(Number(v).toPrecision(6))); }

  // Snap a decoded state onto the values the controls offer, in place (playground.clamp_state
  // does the same in Python). Returns one sentence per value that was changed, for the reader.
  function clampState(st, raw) {
    var notes = [], k, i;
    raw = raw || {};
    for (var key in raw) {
      if (!(key in STATE_DEFAULTS)) { notes.push("ignored " + key + "=" + raw[key] + ": not a setting of this playground."); }
      else if (key !== "G" && raw[key] !== "" && typeof STATE_DEFAULTS[key] === "number" && !isFinite(Number(raw[key]))) {
        notes.push("ignored " + key + "=" + raw[key] + ": not a number; using " + shortNum(STATE_DEFAULTS[key]) + ".");
      }
    }
    if (raw.G !== undefined && raw.G !== "") {
      var asked = String(raw.G).split(","), bad = asked.filter(function (g) { return G_CHOICES.indexOf(Number(g)) < 0; });
      if (bad.length) {
        notes.push("G = " + bad.join(", ") + (bad.length > 1 ? " are" : " is") + " not offered (choose from " +
                   G_CHOICES.join(", ") + "); using G = " + st.G.join(", ") + ".");
      }
    }
    for (i = 0; i < SLIDERS.length; i++) {
      k = SLIDERS[i][0];
      var values = SLIDERS[i][2], v = Number(st[k]), best = 0;
      for (var j = 1; j < values.length; j++) { if (Math.abs(values[j] - v) < Math.abs(values[best] - v)) { best = j; } }
      var snapped = values[best];
      if (Math.abs(snapped - v) > 1e-9 * Math.max(1, Math.abs(v))) {
        var lo = values[0], hi = values[values.length - 1];
        notes.push(k + " = " + shortNum(v) + (v < lo || v > hi ? " is out of range (" + lo + " to " + hi + ")"
                   : " is not one of the slider's values") + "; using " + shortNum(snapped) + ".");
      }
      st[k] = snapped;
    }
    for (i = 0; i < SELECTS.length; i++) {
      k = SELECTS[i][0];
      var options = SELECTS[i][2].map(function (o) { return o[0]; });
      if (options.indexOf(String(st[k])) < 0) {
        notes.push(k + " = " + st[k] + " is not an option (" + options.join(", ") + "); using " + STATE_DEFAULTS[k] + ".");
        st[k] = STATE_DEFAULTS[k];
      } else { st[k] = String(st[k]); }
    }
    var n = Number(st.n_prompts), nc = Math.round(Math.min(N_PROMPTS_RANGE[1], Math.max(N_PROMPTS_RANGE[0], n)));
    if (nc !== n) {
      notes.push("n_prompts = " + shortNum(n) + (n < N_PROMPTS_RANGE[0] || n > N_PROMPTS_RANGE[1] ? " is out of range ("
                 + N_PROMPTS_RANGE[0] + " to " + N_PROMPTS_RANGE[1] + ")" : " is not a whole number") + "; using " + nc + ".");
    }
    st.n_prompts = nc;
    return notes;
  }

  // Why a control changes nothing in setting `st` ("" when it does change something).
  function inertReason(key, st) {
    var budget = st.mode === "budget", ds = String(st.dynamic_sampling) === "1";
    if (key === "budget" && !budget) { return "No effect with a fixed number of prompts per step: B is set by \u201cprompts per step\u201d."; }
    if (key === "prompts_per_step" && budget) { return "No effect in fixed-budget mode: B = \u230abudget / G\u230b (switch batch to fixed prompts)."; }
    if ((key === "a" || key === "b") && st.dataset === "smollm2") { return "No effect: the SmolLM2 pass rates replace the Beta prior."; }
    if (key === "baseline" && st.optimizer === "adam" && Number(st.beta) === 0) {
      return "No effect with Adam: the leave-one-out advantages are the mean baseline's times G/(G\u22121), " +
             "a constant, and Adam's steps ignore a constant factor (try SGD, or a KL weight \u03b2 > 0).";
    }
    if (key === "loss_type" && Number(st.wrong_length) === 1) {
      return "No effect while every completion has the same length: grpo, dapo and dr_grpo then weight " +
             "all completions alike (set a wrong completion's length \u2260 1).";
    }
    if (key === "max_batches" && !ds) { return "No effect with dynamic sampling off."; }
    if (key === "x_axis" && budget && !ds) {
      return "The curves keep their shape: in fixed-budget mode without dynamic sampling every G spends " +
             "about the same completions per step, so the two x-axes differ by a constant factor.";
    }
    return "";
  }

  var api = {mix32: mix32, seedKeys: seedKeys, uniform: uniform, lgamma: lgamma, betainc: betainc,
    betaQuantile: betaQuantile, betaDataset: betaDataset, empiricalDataset: empiricalDataset,
    makeDataset: makeDataset, config: config, prompts: prompts, train: train, advantages: advantages,
    tCritical975: tCritical975, band: band, exactGradientMse: exactGradientMse, fitGStar: fitGStar,
    BUCKET_LABELS: BUCKET_LABELS, DEFAULTS: DEFAULTS, STATE_DEFAULTS: STATE_DEFAULTS, G_CHOICES: G_CHOICES,
    parseFragment: parseFragment, encodeState: encodeState, decodeState: decodeState,
    clampState: clampState, inertReason: inertReason, SLIDERS: SLIDERS, SELECTS: SELECTS,
    N_PROMPTS_RANGE: N_PROMPTS_RANGE};

  if (typeof module !== "undefined" && module.exports) { module.exports = api; }
  if (typeof document === "undefined") { return; }
  if (root.grpolabToy) { if (root.grpolabToy.mountAll) { root.grpolabToy.mountAll(); } return; }
  root.grpolabToy = api;

  // ====================================================================================
  // The page: controls, four SVG figures, readouts, scenarios in the URL
  // ====================================================================================
  var NS = "http://www.w3.org/2000/svg";
  // Light-mode colours (matplotlib's tab10) as attributes; the style's var(--grpolab-cN)
  // (grpolab-sliders.css) follows the theme.
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  // Plot margins in CSS px; each chart is drawn at the width its box has on the page.
  var PL = 58, PR = 12, PT = 12, PB = 44;

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function h(tag, cls, parent, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function fmt(v, d) {
    if (v === null || v === undefined || !isFinite(v)) { return "n/a"; }
    return String(Number(v.toPrecision(d || 3)));
  }
  function niceTicks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var step = Math.pow(10, Math.floor(Math.log10(span / n))), err = n * step / span;
    if (err <= 0.15) { step *= 10; } else if (err <= 0.35) { step *= 5; } else if (err <= 0.75) { step *= 2; }
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) { out.push(Number(t.toPrecision(12))); }
    return out;
  }

  function paint(k) {
    if (typeof k === "string") { return {attr: k, style: k}; }
    var i = k % COLORS.length;
    return {attr: COLORS[i], style: "var(--grpolab-c" + i + ", " + COLORS[i] + ")"};
  }
  var MUTED = {attr: "#57606a", style: "var(--grpolab-muted, #57606a)"};
  // One colour per G, the same as the book's matplotlib figures (grpolab/_palette.py, whose
  // test checks this table against it); var(--grpolab-gN) (grpolab-sliders.css) lightens the
  // dark ones on the dark theme.
  var G_COLORS = {"1": "#555555", "2": "#E69F00", "3": "#882255", "4": "#56B4E9", "6": "#44AA99", "8": "#009E73", "12": "#999933", "16": "#0072B2", "24": "#AA4499", "32": "#D55E00", "64": "#CC79A7", "128": "#000000", "256": "#332288", "512": "#117733"};
  function gPaint(G) {
    var c = G_COLORS[String(G)];
    if (!c) { return paint(G); }
    return {attr: c, style: "var(--grpolab-g" + G + ", " + c + ")"};
  }

  // Width and height (CSS px) for a chart in `box`: drawn at the size it is shown, so its
  // 12-13 px text stays 12-13 px on a phone (one column) and on a desktop (two columns).
  function chartSize(box) {
    var w = Math.round(Math.max(260, Math.min(760, box.clientWidth || 560)));
    return {W: w, H: Math.round(Math.max(230, Math.min(330, w * 0.6)))};
  }

  // A small line chart: series [{label, color, x[], y[], lo[], hi[], dash, points}], markers [{x, label}]
  function chart(svg, spec) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var size = chartSize(svg.parentNode), W = size.W, H = size.H, narrow = W < 400;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", String(W));
    svg.setAttribute("height", String(H));
    if (spec.message) {  // nothing to draw: say why, in the chart itself
      el("text", {x: W / 2, y: H / 2, "text-anchor": "middle", "class": "grpolab-toy-empty"}, svg, spec.message);
      return;
    }
    var xs = [], ys = [];
    spec.series.forEach(function (s) {
      s.x.forEach(function (x, i) {
        if (isFinite(s.y[i])) { xs.push(x); ys.push(s.y[i]); if (s.lo) { ys.push(s.lo[i], s.hi[i]); } }
      });
    });
    (spec.markers || []).forEach(function (m) { if (isFinite(m.x)) { xs.push(m.x); } });
    var xlo = spec.xlim ? spec.xlim[0] : Math.min.apply(null, xs), xhi = spec.xlim ? spec.xlim[1] : Math.max.apply(null, xs);
    var ylo = spec.ylim ? spec.ylim[0] : Math.min(0, Math.min.apply(null, ys)), yhi = spec.ylim ? spec.ylim[1] : Math.max.apply(null, ys) * 1.05;
    if (!(xhi > xlo)) { xhi = xlo + 1; }
    if (!(yhi > ylo)) { yhi = ylo + 1; }
    var fx = spec.logx ? Math.log2 : function (v) { return v; };
    var X = function (v) { return PL + (fx(v) - fx(xlo)) / (fx(xhi) - fx(xlo) || 1) * (W - PL - PR); };
    var Y = function (v) { return H - PB - (v - ylo) / (yhi - ylo) * (H - PT - PB); };
    var axes = el("g", {"class": "grpolab-axes"}, svg);
    el("line", {x1: PL, y1: H - PB, x2: W - PR, y2: H - PB}, axes);
    el("line", {x1: PL, y1: PT, x2: PL, y2: H - PB}, axes);
    var xt = spec.xticks || niceTicks(xlo, xhi, narrow ? 4 : 6);
    var every = 1;  // thin crowded tick labels (about 34 px per label)
    while (xt.length / every > (W - PL - PR) / 34) { every++; }
    xt.forEach(function (t, i) {
      el("line", {x1: X(t), y1: H - PB, x2: X(t), y2: H - PB + 5}, axes);
      if (i % every === 0) {
        el("text", {x: X(t), y: H - PB + 18, "text-anchor": "middle"}, axes, spec.xtickLabels ? spec.xtickLabels(t) : fmt(t, 3));
      }
    });
    niceTicks(ylo, yhi, narrow ? 4 : 5).forEach(function (t) {
      el("line", {x1: PL, y1: Y(t), x2: W - PR, y2: Y(t), "class": "grpolab-grid-line"}, axes);
      el("text", {x: PL - 6, y: Y(t) + 4, "text-anchor": "end"}, axes, fmt(t, 3));
    });
    el("text", {x: (PL + W - PR) / 2, y: H - 6, "text-anchor": "middle", "class": "grpolab-axis-label"}, axes, spec.xlabel);
    el("text", {x: 14, y: (PT + H - PB) / 2, "text-anchor": "middle", "class": "grpolab-axis-label",
      transform: "rotate(-90 14 " + (PT + H - PB) / 2 + ")"}, axes, spec.ylabel);
    spec.series.forEach(function (s) {
      var c = s.color && s.color.attr ? s.color : paint(s.color);
      if (s.lo) {
        var up = [], dn = [];
        s.x.forEach(function (x, i) {
          if (isFinite(s.lo[i])) { up.push(X(x).toFixed(1) + "," + Y(s.hi[i]).toFixed(1)); dn.unshift(X(x).toFixed(1) + "," + Y(s.lo[i]).toFixed(1)); }
        });
        el("polygon", {points: up.concat(dn).join(" "), fill: c.attr, style: "fill: " + c.style, "fill-opacity": 0.18,
          stroke: "none", "class": "grpolab-band"}, svg);
      }
      var pts = [];
      s.x.forEach(function (x, i) { if (isFinite(s.y[i])) { pts.push(X(x).toFixed(1) + "," + Y(s.y[i]).toFixed(1)); } });
      el("polyline", {points: pts.join(" "), fill: "none", stroke: c.attr, style: "stroke: " + c.style, "stroke-width": s.width || 2,
        "stroke-dasharray": s.dash || "none", "data-series": s.label}, svg);
      if (s.points) {
        pts.forEach(function (pt) { var xy = pt.split(","); el("circle", {cx: xy[0], cy: xy[1], r: 3, fill: c.attr, style: "fill: " + c.style}, svg); });
      }
    });
    (spec.markers || []).forEach(function (m) {
      if (!isFinite(m.x) || m.x < xlo || m.x > xhi) { return; }
      el("line", {x1: X(m.x), y1: PT, x2: X(m.x), y2: H - PB, "class": "grpolab-marker", "data-marker": m.label}, svg);
      var right = X(m.x) > W - PR - 70;  // keep the label inside the chart
      el("text", {x: X(m.x) + (right ? -4 : 4), y: PT + 12, "text-anchor": right ? "end" : "start",
        "class": "grpolab-marker-label"}, svg, m.label);
    });
  }

  function sameState(a, b) { return encodeState(a) === encodeState(b); }

  function Playground(rootEl) {
    this.root = rootEl;
    this.data = JSON.parse(rootEl.querySelector("script.grpolab-toy-data").textContent);
    this.timings = [];
    this.inputs = {};
    this.build();
    this.loadFromUrl();
    var self = this;
    // Back and Forward (history entries pushed by the scenarios) and an edited URL.
    var onUrl = function () {
      var frag = parseFragment(root.location.hash), st = decodeState(frag);
      clampState(st, frag);
      if (!sameState(st, self.state)) { self.loadFromUrl(); }
    };
    root.addEventListener("popstate", onUrl);
    root.addEventListener("hashchange", onUrl);
    // A scenario link in the text: load it, add a history entry, and bring the figures into view.
    document.addEventListener("click", function (event) {
      var a = event.target.closest ? event.target.closest("a.grpolab-toy-scenario-link") : null;
      if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) { return; }
      var sc = self.scenario(a.getAttribute("data-scenario"));
      if (!sc) { return; }
      event.preventDefault();
      self.loadScenario(sc, true);
      self.figuresTop.scrollIntoView({block: "start", behavior: "auto"});
    });
    if (root.ResizeObserver) {  // redraw the charts at their new width
      var pending = false, lastW = this.grid.clientWidth;
      new root.ResizeObserver(function () {
        if (pending || !self.last) { return; }
        pending = true;
        root.requestAnimationFrame(function () {
          pending = false;
          if (self.grid.clientWidth !== lastW) { lastW = self.grid.clientWidth; self.draw.apply(self, self.last); }
        });
      }).observe(this.grid);
    }
  }

  Playground.prototype.scenario = function (key) {
    return this.data.scenarios.filter(function (sc) { return sc.key === key; })[0] || null;
  };

  // The setting in the URL, snapped to the controls' values, with a note for each value that
  // was changed and the scenario's explanation when the URL is a scenario's.
  Playground.prototype.loadFromUrl = function () {
    var frag = parseFragment(root.location ? root.location.hash : "");
    this.state = decodeState(frag);
    var notes = clampState(this.state, frag), st = this.state;
    var match = this.data.scenarios.filter(function (sc) {
      var s2 = decodeState(parseFragment(sc.hash));
      clampState(s2);
      return sameState(s2, st);
    });
    this.scenarioNote.textContent = match.length ? match[0].notice : "";
    this.urlNote.textContent = notes.length ? "The link asked for a setting the controls do not offer: " + notes.join(" ") : "";
    this.urlNote.hidden = !notes.length;
    this.syncInputs();
    this.run();
  };

  Playground.prototype.loadScenario = function (sc, push) {
    this.state = sc ? decodeState(parseFragment(sc.hash)) : decodeState({});
    clampState(this.state);
    this.syncInputs();
    this.scenarioNote.textContent = sc ? sc.notice : "";
    this.urlNote.textContent = ""; this.urlNote.hidden = true;
    this.run(push);
  };

  Playground.prototype.build = function () {
    var self = this, box = this.root;
    var scen = h("div", "grpolab-toy-scenarios", box);
    h("span", "grpolab-toy-scenarios-label", scen, "Scenarios: ");
    this.data.scenarios.forEach(function (sc) {
      var btn = h("button", "grpolab-toy-scenario", scen, sc.title);
      btn.type = "button";
      btn.setAttribute("data-scenario", sc.key);
      btn.addEventListener("click", function () { self.loadScenario(sc, true); });
    });
    var reset = h("button", "grpolab-toy-scenario", scen, "default");
    reset.type = "button";
    reset.setAttribute("data-scenario", "default");
    reset.addEventListener("click", function () { self.loadScenario(null, true); });
    this.urlNote = h("p", "grpolab-toy-url-note", box, "");
    this.urlNote.setAttribute("role", "status");
    this.urlNote.hidden = true;

    var controls = h("div", "grpolab-controls grpolab-toy-controls", box);
    var gbox = h("div", "grpolab-toy-gs", controls);
    h("span", "grpolab-slider-label", gbox, "G values: ");
    this.gChecks = G_CHOICES.map(function (g) {
      var lab = h("label", "grpolab-toy-g", gbox);
      var cb = h("input", null, lab);
      cb.type = "checkbox"; cb.value = String(g); cb.setAttribute("data-g", String(g));
      lab.appendChild(document.createTextNode(String(g)));
      cb.addEventListener("change", function () {
        var gs = self.gChecks.filter(function (c) { return c.checked; }).map(function (c) { return Number(c.value); });
        if (!gs.length) { cb.checked = true; return; }
        self.state.G = gs; self.run();
      });
      return cb;
    });
    var noteFor = function (lab, key) {  // where the control says why it has no effect
      var note = h("span", "grpolab-toy-inert", lab, "");
      note.id = "grpolab-toy-inert-" + key + "-" + Math.random().toString(36).slice(2, 8);
      note.hidden = true;
      return note;
    };
    SELECTS.forEach(function (spec) {
      var lab = h("label", "grpolab-slider", controls);
      h("span", "grpolab-slider-label", lab, spec[1]);
      var sel = h("select", null, lab);
      sel.setAttribute("data-param", spec[0]);
      spec[2].forEach(function (o) { var op = h("option", null, sel, o[1]); op.value = o[0]; });
      sel.addEventListener("change", function () { self.state[spec[0]] = sel.value; self.run(); });
      self.inputs[spec[0]] = {el: sel, label: lab, note: noteFor(lab, spec[0])};
    });
    SLIDERS.forEach(function (spec) {
      var lab = h("label", "grpolab-slider", controls);
      h("span", "grpolab-slider-label", lab, spec[1]);
      var inp = h("input", null, lab);
      inp.type = "range"; inp.min = "0"; inp.max = String(spec[2].length - 1); inp.step = "1";
      inp.setAttribute("data-param", spec[0]); inp.setAttribute("aria-label", spec[1]);
      var out = h("output", "grpolab-slider-value", lab);
      inp.addEventListener("input", function () {
        self.state[spec[0]] = spec[2][Number(inp.value)]; out.textContent = fmt(self.state[spec[0]], 4); self.run();
      });
      self.inputs[spec[0]] = {el: inp, values: spec[2], out: out, label: lab, note: noteFor(lab, spec[0])};
    });
    this.status = h("p", "grpolab-toy-status", box, "");
    this.status.setAttribute("data-role", "status");
    this.status.setAttribute("role", "status");
    // The scenario's explanation sits right above the figures it is about.
    this.figuresTop = h("div", "grpolab-toy-figures-top", box);
    this.scenarioNote = h("p", "grpolab-toy-scenario-note", this.figuresTop, "");
    this.legend = h("div", "grpolab-legend", this.figuresTop);
    var grid = h("div", "grpolab-toy-figures", box);
    this.grid = grid;
    this.figs = {};
    [["curves", "Learning curves: mean pass rate over all prompts (95% band over seeds)"],
     ["final", "Final pass rate against G, with the predicted G* = 1 + \u221a(c\u2083/c\u2081)"],
     ["zero_variance", "Zero-variance groups over training: observed (solid) and p^G + (1\u2212p)^G (dashed)"],
     ["buckets", "Final pass rate per difficulty bucket (starting pass rate p\u2080)"]].forEach(function (f) {
      var fig = h("div", "grpolab-toy-figure", grid);
      h("p", "grpolab-title", fig, f[1]);
      var svg = el("svg", {role: "img", "class": "grpolab-plot", "data-figure": f[0], tabindex: "0"}, fig);
      svg.setAttribute("aria-label", f[1]);
      self.figs[f[0]] = svg;
    });
    this.table = h("table", "grpolab-readouts grpolab-toy-readouts", box);
    this.link = h("a", "grpolab-toy-link", h("p", null, box, "Link to this setting: "), "");
  };

  Playground.prototype.syncInputs = function () {
    var st = this.state;
    this.gChecks.forEach(function (cb) { cb.checked = st.G.indexOf(Number(cb.value)) >= 0; });
    for (var k in this.inputs) {
      var inp = this.inputs[k];
      if (inp.values) {
        var i = inp.values.indexOf(st[k]);
        inp.el.value = String(i >= 0 ? i : 0); inp.out.textContent = fmt(st[k], 4);
      } else { inp.el.value = String(st[k]); }
    }
  };

  // Mark the controls that change nothing in the current setting, and say why.
  Playground.prototype.markInert = function () {
    for (var k in this.inputs) {
      var inp = this.inputs[k], why = inertReason(k, this.state);
      inp.note.textContent = why;
      inp.note.hidden = !why;
      inp.label.classList.toggle("grpolab-inert", !!why);
      if (why) { inp.el.setAttribute("aria-describedby", inp.note.id); inp.el.setAttribute("data-inert", "true"); }
      else { inp.el.removeAttribute("aria-describedby"); inp.el.removeAttribute("data-inert"); }
    }
  };

  Playground.prototype.dataset = function () {
    var st = this.state;
    if (st.dataset === "smollm2") {
      var d = this.data.smollm2;
      return empiricalDataset(d.successes, d.samples, "SmolLM2-135M pass rates");
    }
    return betaDataset(st.a, st.b, st.n_prompts);
  };

  // Retrain every G of the state; `push` adds a history entry (a scenario), else the URL is
  // replaced (a control change), so Back goes to the previous scenario, not the last slider move.
  Playground.prototype.run = function (push) {
    var st = this.state, self = this;
    var start = (root.performance || Date).now();
    var ds, results = [], skipped = [], gstar = null;
    this.markInert();
    this.root.removeAttribute("data-error");
    try {
      ds = this.dataset();
      var seeds = [];
      for (var s = 0; s < st.seeds; s++) { seeds.push(s); }
      var kept = ds.passRates.filter(function (p) { return p >= st.filter_low && p <= st.filter_high; }).length;
      if (!kept) {
        throw new Error("no prompt of this dataset has a starting pass rate between " + st.filter_low + " and " +
                        st.filter_high + " (the \u201ctrain only on\u201d filter): widen the filter.");
      }
      st.G.forEach(function (G) {
        if (st.mode === "budget" && st.budget < G) { skipped.push(G); return; }
        var c = config({num_generations: G, mode: st.mode, budget: st.budget, prompts_per_step: st.prompts_per_step,
          steps: st.steps, learning_rate: st.learning_rate, optimizer: st.optimizer, scale_rewards: st.scale_rewards,
          baseline: st.baseline, loss_type: st.loss_type, wrong_length: st.wrong_length, beta: st.beta,
          temperature: st.temperature, dynamic_sampling: st.dynamic_sampling === "1", max_batches: st.max_batches,
          filter_low: st.filter_low, filter_high: st.filter_high, transfer: st.transfer});
        results.push({G: G, res: train(ds, c, seeds)});
      });
      gstar = fitGStar(ds, config({temperature: st.temperature, transfer: st.transfer}));
    } catch (err) {
      this.root.setAttribute("data-error", String(err));
      this.status.textContent = "Nothing to train: " + err.message;
      this.clear("nothing to train (see the message above)");
      this.writeUrl(push);
      return;
    }
    var ms = (root.performance || Date).now() - start;
    this.timings.push(ms);
    if (!results.length) {
      var gmin = Math.min.apply(null, st.G);
      this.status.textContent = "No G fits the budget: " + st.budget + " completions per step is less than one group of G = " +
        st.G.join(", ") + ". Raise the budget to at least " + gmin + ", or tick a G of at most " + st.budget + ".";
      this.clear("no G fits the budget of " + st.budget + " completions");
    } else {
      this.last = [ds, results, gstar];
      this.draw(ds, results, gstar);
      var msg = "Retrained " + results.length + " G value(s) \u00d7 " + st.seeds + " seeds \u00d7 " + st.steps +
        " steps in your browser in " + Math.round(ms) + " ms.";
      if (skipped.length) { msg += " Skipped G = " + skipped.join(", ") + ": more completions than the budget of " + st.budget + " per step."; }
      this.status.textContent = msg;
    }
    this.status.setAttribute("data-ms", String(ms));
    this.writeUrl(push);
    this.root.setAttribute("data-runs", String(this.timings.length));
  };

  Playground.prototype.writeUrl = function (push) {
    var hash = encodeState(this.state), loc = root.location;
    var here = loc ? loc.href.split("#")[0] : "";
    this.link.textContent = hash ? here + "#" + hash : here + " (the default setting)";
    this.link.href = hash ? "#" + hash : here;
    if (!root.history || !root.history.replaceState) { return; }
    var url = hash ? "#" + hash : loc.pathname + loc.search;  // the default setting: no bare "#"
    if (loc.hash.replace(/^#/, "") === hash) { return; }
    if (push) { root.history.pushState(null, "", url); } else { root.history.replaceState(null, "", url); }
  };

  // Empty charts with a sentence in each, and no table (nothing was trained).
  Playground.prototype.clear = function (why) {
    var self = this;
    this.last = null;
    Object.keys(this.figs).forEach(function (k) { chart(self.figs[k], {message: why}); });
    this.legend.innerHTML = "";
    this.table.innerHTML = "";
  };

  function padded(values) {
    var v = values.filter(isFinite), lo = Math.min.apply(null, v), hi = Math.max.apply(null, v), pad = 0.08 * (hi - lo || 0.1);
    return [Math.max(0, lo - pad), Math.min(1, hi + pad)];
  }

  var BUCKET_SHORT = ["< 0.05", "0.05\u20130.2", "0.2\u20130.5", "\u2265 0.5"];

  Playground.prototype.draw = function (ds, results, gstar) {
    var st = this.state, self = this;
    var colorOf = gPaint;
    var curves = [], zeroVar = [], finals = {x: [], y: [], lo: [], hi: []}, buckets = [];
    var rows = [["G", "prompts per step B", "final pass rate (95% CI)", "zero-variance groups observed", "p^G + (1\u2212p)^G", "completions"]];
    results.forEach(function (r) {
      var R = r.res, S = R.S, T1 = R.steps + 1, stride = Math.max(1, Math.floor(R.steps / 100));
      var x = [], y = [], lo = [], hi = [], dx = [], dobs = [], dpred = [];
      var ts = [];
      for (var t = 0; t < T1 - 1; t += stride) { ts.push(t); }
      ts.push(T1 - 1);
      ts.forEach(function (tt) {
        var pr = band(R.pass_rate, S, T1, tt);
        x.push(st.x_axis === "steps" ? tt : band(R.completions, S, T1, tt)[0]); y.push(pr[0]); lo.push(pr[0] - pr[1]); hi.push(pr[0] + pr[1]);
      });
      for (var u = 0; u < R.steps; u += stride) {
        dx.push(u); dobs.push(band(R.zero_variance_observed, S, R.steps, u)[0]); dpred.push(band(R.zero_variance_predicted, S, R.steps, u)[0]);
      }
      curves.push({label: "G = " + r.G, color: colorOf(r.G), x: x, y: y, lo: lo, hi: hi});
      zeroVar.push({label: "G = " + r.G + " observed", color: colorOf(r.G), x: dx, y: dobs});
      zeroVar.push({label: "G = " + r.G + " predicted", color: colorOf(r.G), x: dx, y: dpred, dash: "5 3", width: 1.5});
      var fin = band(R.pass_rate, S, T1, T1 - 1);
      finals.x.push(r.G); finals.y.push(fin[0]); finals.lo.push(fin[0] - fin[1]); finals.hi.push(fin[0] + fin[1]);
      var K = BUCKET_LABELS.length, by = [];
      for (var k = 0; k < K; k++) { by.push(band(R.bucket_pass_rate, S, T1, T1 - 1, K, k)[0]); }
      buckets.push({label: "G = " + r.G, color: colorOf(r.G), x: [0, 1, 2, 3], y: by, points: true});
      var dobsAll = 0, dpredAll = 0;
      for (var i = 0; i < S * R.steps; i++) { dobsAll += R.zero_variance_observed[i]; dpredAll += R.zero_variance_predicted[i]; }
      rows.push([String(r.G), String(R.B), fmt(fin[0], 3) + " \u00b1 " + fmt(fin[1], 2), fmt(dobsAll / (S * R.steps), 3),
        fmt(dpredAll / (S * R.steps), 3), fmt(band(R.completions, S, T1, T1 - 1)[0], 4)]);
    });
    var gs = gstar && isFinite(gstar.G_star) ? gstar.G_star : NaN;
    var firstStart = results.length ? band(results[0].res.pass_rate, results[0].res.S, results[0].res.steps + 1, 0)[0] : NaN;
    chart(this.figs.curves, {series: curves, xlabel: st.x_axis === "steps" ? "optimizer step" : "completions generated (mean over seeds)", ylabel: "mean pass rate", ylim: [0, 1]});
    var gmin = Math.min.apply(null, finals.x.concat([2])), gmax = Math.max.apply(null, finals.x.concat([4]));
    var ticks = G_CHOICES.filter(function (g) { return g >= gmin && g <= gmax; });
    chart(this.figs.final, {series: [{label: "final pass rate", color: paint(0), x: finals.x, y: finals.y, lo: finals.lo, hi: finals.hi, points: true},
      {label: "start", color: MUTED, x: [gmin, gmax], y: [firstStart, firstStart], dash: "2 3", width: 1}],
      markers: [{x: gs, label: "G* = " + fmt(gs, 3)}], xlabel: "group size G", ylabel: "final pass rate", logx: true,
      xlim: [gmin, gmax], xticks: ticks, ylim: padded(finals.lo.concat(finals.hi, [firstStart]))});
    chart(this.figs.zero_variance, {series: zeroVar, xlabel: "step", ylabel: "zero-variance fraction", ylim: [0, 1]});
    chart(this.figs.buckets, {series: buckets, xlabel: "starting pass rate p₀ (difficulty bucket)", ylabel: "final pass rate", ylim: [0, 1],
      xlim: [-0.4, 3.4], xticks: [0, 1, 2, 3], xtickLabels: function (t) { return BUCKET_SHORT[t] || ""; }});
    // legend + readouts
    this.legend.innerHTML = "";
    results.forEach(function (r) {
      var item = h("span", null, self.legend), sw = h("span", "grpolab-swatch", item);
      sw.style.background = colorOf(r.G).style;
      item.appendChild(document.createTextNode("G = " + r.G));
    });
    this.table.innerHTML = "";
    rows.forEach(function (row, i) {
      var tr = h("tr", null, self.table);
      row.forEach(function (cell) { var td = h(i === 0 ? "th" : "td", null, tr, cell); if (i > 0) { td.setAttribute("data-role", "readout"); } });
    });
    var counts = [0, 0, 0, 0];
    ds.buckets.forEach(function (k) { counts[k]++; });
    var tr2 = h("tr", null, this.table);
    h("th", null, tr2, "G* = 1 + \u221a(c\u2083/c\u2081) from the exact gradient MSE at the start");
    var td2 = h("td", null, tr2, isFinite(gs) ? fmt(gs, 3) + " (fitted on the unbiased RLOO gradient; c\u2081, c\u2082, c\u2083 = " +
      gstar.c.map(function (v) { return fmt(v, 3); }).join(", ") + ")" : "n/a");
    td2.setAttribute("data-role", "gstar");
    td2.colSpan = 5;
    var tr3 = h("tr", null, this.table);
    h("th", null, tr3, "prompts per bucket (" + ds.name + ")");
    var td3 = h("td", null, tr3, BUCKET_LABELS.map(function (l, i) { return l + ": " + counts[i]; }).join("; "));
    td3.colSpan = 5;
  };

  function mountAll() {
    var roots = document.querySelectorAll(".grpolab-toy:not([data-mounted])");
    for (var i = 0; i < roots.length; i++) {
      roots[i].setAttribute("data-mounted", "1");
      try { roots[i].grpolabPlayground = new Playground(roots[i]); }
      catch (err) { roots[i].setAttribute("data-error", String(err)); throw err; }
    }
  }
  api.mountAll = mountAll;
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", mountAll); }
  else { mountAll(); }
})(typeof window !== "undefined" ? window : this);
