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
  function exactGradientMse(ds, c, B, G) {
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
    var sm1 = 0, sm2 = 0, per = 0;
    for (j = 0; j < N; j++) {
      var p = sigmoid(ds.logits[j] / T), m1 = 0, m2 = 0;
      for (k = 0; k <= G; k++) {
        var lp = logc[k] + (k > 0 ? k * Math.log(p) : 0) + (k < G ? (G - k) * Math.log1p(-p) : 0);
        var pmf = Math.exp(lp), g = (a[k] - p * cc[k]) / T;
        m1 += pmf * g; m2 += pmf * g * g;
      }
      sm1 += m1; sm2 += m2; per += m2 / N - m1 * m1 / (N * N);
    }
    var shared = c.transfer * c.transfer * (sm2 / N - (sm1 / N) * (sm1 / N));
    return B * (shared + per);
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
      var rhs = cols.map(function (a) { return rows.reduce(function (acc, r) { return acc + r[a]; }, 0); });
      var sol = solve(A, rhs);
      if (sol.some(function (v) { return !(v >= 0); })) { return; }
      var c = [0, 0, 0];
      cols.forEach(function (col, i) { c[col] = sol[i]; });
      var err = rows.reduce(function (acc, r) { var e = r[0] * c[0] + r[1] * c[1] + r[2] * c[2] - 1; return acc + e * e; }, 0);
      if (err < bestErr - 1e-15) { best = c; bestErr = err; }
    });
    return best;
  }
  // G* on the unbiased estimator (toy.predicted_optimal_group_size).
  function fitGStar(ds, c0) {
    var c = {};
    for (var key in c0) { c[key] = c0[key]; }
    c.baseline = "leave_one_out"; c.scale_rewards = "none"; c.loss_type = "grpo"; c.wrong_length = 1;
    var rows = [];
    for (var bi = 0; bi < FIT_B.length; bi++) {
      for (var gi = 0; gi < FIT_G.length; gi++) {
        var B = FIT_B[bi], G = FIT_G[gi], mse = exactGradientMse(ds, c, B, G);
        rows.push([1 / B / mse, 1 / (B * G) / mse, 1 / (B * G * G) / mse]);
      }
    }
    var cs = fitMseConstants(rows);
    if (!cs || !(cs[0] > 0)) { return {c: cs || [NaN, NaN, NaN], G_star: NaN}; }
    return {c: cs, G_star: Math.sqrt(cs[2] / cs[0])};
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
      if (!(key in STATE_DEFAULTS)) { continue; }
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

  var api = {mix32: mix32, seedKeys: seedKeys, uniform: uniform, lgamma: lgamma, betainc: betainc,
    betaQuantile: betaQuantile, betaDataset: betaDataset, empiricalDataset: empiricalDataset,
    makeDataset: makeDataset, config: config, prompts: prompts, train: train, advantages: advantages,
    tCritical975: tCritical975, band: band, exactGradientMse: exactGradientMse, fitGStar: fitGStar,
    BUCKET_LABELS: BUCKET_LABELS, DEFAULTS: DEFAULTS, STATE_DEFAULTS: STATE_DEFAULTS, G_CHOICES: G_CHOICES,
    parseFragment: parseFragment, encodeState: encodeState, decodeState: decodeState};

  if (typeof module !== "undefined" && module.exports) { module.exports = api; }
  if (typeof document === "undefined") { return; }
  if (root.grpolabToy) { if (root.grpolabToy.mountAll) { root.grpolabToy.mountAll(); } return; }
  root.grpolabToy = api;

  // ====================================================================================
  // The page: controls, four SVG figures, readouts, scenarios in the URL
  // ====================================================================================
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var W = 560, H = 300, PL = 56, PR = 12, PT = 12, PB = 42;
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

  // A small line chart: series [{label, color, x[], y[], lo[], hi[], dash, points}], markers [{x, label}]
  function chart(svg, spec) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
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
    var xt = spec.xticks || niceTicks(xlo, xhi, 6);
    xt.forEach(function (t) {
      el("line", {x1: X(t), y1: H - PB, x2: X(t), y2: H - PB + 5}, axes);
      el("text", {x: X(t), y: H - PB + 17, "text-anchor": "middle"}, axes, spec.xtickLabels ? spec.xtickLabels(t) : fmt(t, 3));
    });
    niceTicks(ylo, yhi, 5).forEach(function (t) {
      el("line", {x1: PL, y1: Y(t), x2: W - PR, y2: Y(t), "class": "grpolab-grid-line"}, axes);
      el("text", {x: PL - 6, y: Y(t) + 4, "text-anchor": "end"}, axes, fmt(t, 3));
    });
    el("text", {x: (PL + W - PR) / 2, y: H - 6, "text-anchor": "middle", "class": "grpolab-axis-label"}, axes, spec.xlabel);
    el("text", {x: 13, y: (PT + H - PB) / 2, "text-anchor": "middle", "class": "grpolab-axis-label",
      transform: "rotate(-90 13 " + (PT + H - PB) / 2 + ")"}, axes, spec.ylabel);
    spec.series.forEach(function (s) {
      if (s.lo) {
        var up = [], dn = [];
        s.x.forEach(function (x, i) {
          if (isFinite(s.lo[i])) { up.push(X(x).toFixed(1) + "," + Y(s.hi[i]).toFixed(1)); dn.unshift(X(x).toFixed(1) + "," + Y(s.lo[i]).toFixed(1)); }
        });
        el("polygon", {points: up.concat(dn).join(" "), fill: s.color, "fill-opacity": 0.18, stroke: "none", "class": "grpolab-band"}, svg);
      }
      var pts = [];
      s.x.forEach(function (x, i) { if (isFinite(s.y[i])) { pts.push(X(x).toFixed(1) + "," + Y(s.y[i]).toFixed(1)); } });
      el("polyline", {points: pts.join(" "), fill: "none", stroke: s.color, "stroke-width": s.width || 2,
        "stroke-dasharray": s.dash || "none", "data-series": s.label}, svg);
      if (s.points) {
        pts.forEach(function (pt) { var xy = pt.split(","); el("circle", {cx: xy[0], cy: xy[1], r: 3, fill: s.color}, svg); });
      }
    });
    (spec.markers || []).forEach(function (m) {
      if (!isFinite(m.x) || m.x < xlo || m.x > xhi) { return; }
      el("line", {x1: X(m.x), y1: PT, x2: X(m.x), y2: H - PB, "class": "grpolab-marker", "data-marker": m.label}, svg);
      el("text", {x: X(m.x) + 4, y: PT + 12, "class": "grpolab-marker-label"}, svg, m.label);
    });
  }

  function Playground(rootEl) {
    this.root = rootEl;
    this.data = JSON.parse(rootEl.querySelector("script.grpolab-toy-data").textContent);
    this.timings = [];
    this.inputs = {};
    var fromHash = parseFragment(root.location ? root.location.hash : "");
    this.state = decodeState(Object.keys(fromHash).length ? fromHash : {});
    this.build();
    this.run();
    var self = this;
    // A scenario link on the page (or an edited URL) changes the fragment: load that setting.
    root.addEventListener("hashchange", function () {
      var frag = parseFragment(root.location.hash);
      if (encodeState(decodeState(frag)) === encodeState(self.state)) { return; }
      self.state = decodeState(frag);
      self.syncInputs();
      var match = self.data.scenarios.filter(function (sc) {
        return encodeState(decodeState(parseFragment(sc.hash))) === encodeState(self.state); });
      self.scenarioNote.textContent = match.length ? match[0].notice : "";
      self.run();
    });
  }

  Playground.prototype.build = function () {
    var self = this, root = this.root;
    var scen = h("div", "grpolab-toy-scenarios", root);
    h("span", "grpolab-toy-scenarios-label", scen, "Scenarios: ");
    this.scenarioNote = h("p", "grpolab-toy-scenario-note", null, "");
    this.data.scenarios.forEach(function (sc) {
      var btn = h("button", "grpolab-toy-scenario", scen, sc.title);
      btn.type = "button";
      btn.setAttribute("data-scenario", sc.key);
      btn.addEventListener("click", function () {
        self.state = decodeState(parseFragment(sc.hash));
        self.syncInputs();
        self.scenarioNote.textContent = sc.notice;
        self.run();
      });
    });
    var reset = h("button", "grpolab-toy-scenario", scen, "default");
    reset.type = "button";
    reset.setAttribute("data-scenario", "default");
    reset.addEventListener("click", function () { self.state = decodeState({}); self.syncInputs(); self.scenarioNote.textContent = ""; self.run(); });
    root.appendChild(this.scenarioNote);

    var controls = h("div", "grpolab-controls grpolab-toy-controls", root);
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
    SELECTS.forEach(function (spec) {
      var lab = h("label", "grpolab-slider", controls);
      h("span", "grpolab-slider-label", lab, spec[1]);
      var sel = h("select", null, lab);
      sel.setAttribute("data-param", spec[0]);
      spec[2].forEach(function (o) { var op = h("option", null, sel, o[1]); op.value = o[0]; });
      sel.addEventListener("change", function () { self.state[spec[0]] = sel.value; self.run(); });
      self.inputs[spec[0]] = {el: sel};
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
      self.inputs[spec[0]] = {el: inp, values: spec[2], out: out};
    });
    this.status = h("p", "grpolab-toy-status", root, "");
    this.status.setAttribute("data-role", "status");
    var grid = h("div", "grpolab-toy-figures", root);
    this.figs = {};
    [["curves", "Learning curves: mean pass rate over all prompts (95% band over seeds)"],
     ["final", "Final pass rate against G, with the predicted G* = \u221a(c\u2083/c\u2081)"],
     ["zero_variance", "Zero-variance groups over training: observed (solid) and p^G + (1\u2212p)^G (dashed)"],
     ["buckets", "Final pass rate per difficulty bucket (starting pass rate p\u2080)"]].forEach(function (f) {
      var box = h("div", "grpolab-toy-figure", grid);
      h("p", "grpolab-title", box, f[1]);
      var svg = el("svg", {viewBox: "0 0 " + W + " " + H, role: "img", "class": "grpolab-plot", "data-figure": f[0]}, box);
      svg.setAttribute("aria-label", f[1]);
      self.figs[f[0]] = svg;
    });
    this.legend = h("div", "grpolab-legend", root);
    this.table = h("table", "grpolab-readouts grpolab-toy-readouts", root);
    this.link = h("a", "grpolab-toy-link", h("p", null, root, "Link to this setting: "), "");
    this.syncInputs();
  };

  Playground.prototype.syncInputs = function () {
    var st = this.state, self = this;
    this.gChecks.forEach(function (cb) { cb.checked = st.G.indexOf(Number(cb.value)) >= 0; });
    for (var k in this.inputs) {
      var inp = this.inputs[k];
      if (inp.values) {
        var best = 0;
        inp.values.forEach(function (v, i) { if (Math.abs(v - st[k]) < Math.abs(inp.values[best] - st[k])) { best = i; } });
        inp.el.value = String(best); st[k] = inp.values[best]; inp.out.textContent = fmt(st[k], 4);
      } else { inp.el.value = String(st[k]); }
    }
    void self;
  };

  Playground.prototype.dataset = function () {
    var st = this.state;
    if (st.dataset === "smollm2") {
      var d = this.data.smollm2;
      return empiricalDataset(d.successes, d.samples, "SmolLM2-135M pass rates");
    }
    return betaDataset(st.a, st.b, st.n_prompts);
  };

  Playground.prototype.run = function () {
    var st = this.state, self = this;
    var start = (root.performance || Date).now();
    var ds, results = [], skipped = [], gstar = null;
    try {
      ds = this.dataset();
      var seeds = [];
      for (var s = 0; s < st.seeds; s++) { seeds.push(s); }
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
      this.status.textContent = "error: " + err.message;
      return;
    }
    var ms = (root.performance || Date).now() - start;
    this.timings.push(ms);
    this.draw(ds, results, gstar);
    var msg = "Retrained " + results.length + " G value(s) \u00d7 " + st.seeds + " seeds \u00d7 " + st.steps +
      " steps in your browser in " + Math.round(ms) + " ms.";
    if (skipped.length) { msg += " Skipped G = " + skipped.join(", ") + " (larger than the budget)."; }
    this.status.textContent = msg;
    this.status.setAttribute("data-ms", String(ms));
    var hash = encodeState(st);
    var here = root.location ? root.location.href.split("#")[0] : "";
    this.link.textContent = hash ? here + "#" + hash : here + " (the default setting)";
    this.link.href = "#" + hash;
    if (root.history && root.history.replaceState) { root.history.replaceState(null, "", "#" + hash); }
    this.root.setAttribute("data-runs", String(this.timings.length));
  };

  function padded(values) {
    var v = values.filter(isFinite), lo = Math.min.apply(null, v), hi = Math.max.apply(null, v), pad = 0.08 * (hi - lo || 0.1);
    return [Math.max(0, lo - pad), Math.min(1, hi + pad)];
  }

  Playground.prototype.draw = function (ds, results, gstar) {
    var st = this.state, self = this;
    var colorOf = function (G) { return COLORS[G_CHOICES.indexOf(G) % COLORS.length]; };
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
    chart(this.figs.curves, {series: curves, xlabel: st.x_axis === "steps" ? "optimizer step" : "completions generated (mean over seeds)", ylabel: "mean pass rate over prompts", ylim: [0, 1]});
    var gmin = Math.min.apply(null, finals.x.concat([2])), gmax = Math.max.apply(null, finals.x.concat([4]));
    var ticks = G_CHOICES.filter(function (g) { return g >= gmin && g <= gmax; });
    chart(this.figs.final, {series: [{label: "final pass rate", color: "#1f77b4", x: finals.x, y: finals.y, lo: finals.lo, hi: finals.hi, points: true},
      {label: "start", color: "#8c959f", x: [gmin, gmax], y: [firstStart, firstStart], dash: "2 3", width: 1}],
      markers: [{x: gs, label: "G* = " + fmt(gs, 3)}], xlabel: "group size G", ylabel: "final pass rate", logx: true,
      xlim: [gmin, gmax], xticks: ticks, ylim: padded(finals.lo.concat(finals.hi, [firstStart]))});
    chart(this.figs.zero_variance, {series: zeroVar, xlabel: "step", ylabel: "fraction of groups with no signal", ylim: [0, 1]});
    chart(this.figs.buckets, {series: buckets, xlabel: "difficulty bucket (starting pass rate)", ylabel: "final pass rate", ylim: [0, 1],
      xlim: [-0.3, 3.3], xticks: [0, 1, 2, 3], xtickLabels: function (t) { return BUCKET_LABELS[t] || ""; }});
    // legend + readouts
    this.legend.innerHTML = "";
    results.forEach(function (r) {
      var item = h("span", null, self.legend), sw = h("span", "grpolab-swatch", item);
      sw.style.background = colorOf(r.G);
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
    h("th", null, tr2, "G* = \u221a(c\u2083/c\u2081) from the exact gradient MSE at the start");
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
