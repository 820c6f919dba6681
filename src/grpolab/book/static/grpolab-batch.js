/* grpolab's TRL batch calculator: what TRL's GRPOConfig makes of your batch settings.
 *
 * No libraries, no network. trlBatch() repeats the arithmetic of trl 1.16's
 * GRPOConfig.__post_init__ (generation_batch_size, steps_per_generation, the
 * divisibility by num_generations), of GRPOTrainer (one generation every
 * steps_per_generation × num_iterations micro-steps; old log-probs, i.e. off-policy updates,
 * when gradient_accumulation_steps is not a multiple of that) and of its RepeatSampler with
 * transformers' Trainer (optimizer steps per epoch). tests/test_batch_calculator.py runs it
 * under Node against trl.GRPOConfig and RepeatSampler themselves. In a browser it mounts
 * every <div class="grpolab-batch"> as a form with live readouts.
 *
 * Derived in: book/capstone/02-choose-g-for-your-run.md ("2. The batch arithmetic").
 */
(function (root) {
  "use strict";

  var FIELDS = [
    // [key, TRL's name, label, default, minimum]
    ["processes", "num_processes", "processes (GPUs)", 1, 1],
    ["per_device_batch", "per_device_train_batch_size", "per-device batch (completions)", 8, 1],
    ["grad_accum", "gradient_accumulation_steps", "gradient accumulation steps", 4, 1],
    ["G", "num_generations", "G: completions per prompt", 8, 1],
    ["steps_per_generation", "steps_per_generation", "steps per generation (blank: = accumulation)", null, 1],
    ["num_iterations", "num_iterations", "updates per generation (num_iterations)", 1, 1],
    ["dataset_prompts", "len(train_dataset)", "prompts in your dataset", 1000, 1]
  ];

  function gcd(a, b) { while (b) { var t = a % b; a = b; b = t; } return a; }

  function isCount(v) { return typeof v === "number" && isFinite(v) && Math.floor(v) === v && v >= 1 && v <= 1e9; }

  /* The most optimizer steps a sample waits between its generation and its last use: the
   * policy that generated it is that many updates old (0: on-policy). */
  function maxStaleness(A, every) {
    var period = A / gcd(A, every) * every, worst = 0;
    if (period > 1e6) { period = 1e6; }
    for (var m = 0; m < period; m++) {
      var g = Math.floor(m / every) * every;
      worst = Math.max(worst, Math.floor(m / A) - Math.floor(g / A));
    }
    return worst;
  }

  /* The smallest per-device batch >= b whose generation batch holds whole groups of G. */
  function fittingBatch(b, P, S, G) {
    for (var c = b; c < b + G + 1; c++) { if ((c * P * S) % G === 0) { return c; } }
    return G;
  }

  /* TRL's batch arithmetic. inp: {processes, per_device_batch, grad_accum, G,
   * steps_per_generation (null: TRL's default, = grad_accum), num_iterations,
   * dataset_prompts (optional)}. Returns {ok: false, error} where TRL's GRPOConfig raises,
   * else every derived size. */
  function trlBatch(inp) {
    var P = inp.processes, b = inp.per_device_batch, A = inp.grad_accum, G = inp.G;
    var I = inp.num_iterations == null ? 1 : inp.num_iterations;
    var S = inp.steps_per_generation == null ? A : inp.steps_per_generation;
    var names = {processes: P, per_device_train_batch_size: b, gradient_accumulation_steps: A,
                 num_generations: G, steps_per_generation: S, num_iterations: I};
    for (var k in names) {
      if (!isCount(names[k])) { return {ok: false, error: k + " must be a whole number \u2265 1"}; }
    }
    var gbs = b * P * S;  // generation_batch_size: completions generated at once, all processes
    if (G < 2) {
      return {ok: false, error: "GRPO requires at least 2 generations per prompt to calculate the " +
              "advantages (num_generations = " + G + "): a group of one has no baseline"};
    }
    if (gbs % G !== 0) {
      var fit = fittingBatch(b, P, S, G);
      return {ok: false, generation_batch_size: gbs,
              error: "generation_batch_size (" + gbs + ") must be divisible by num_generations (" + G +
                     "): " + gbs + " completions are " + (gbs / G).toFixed(2).replace(/\.?0+$/, "") +
                     " groups of " + G + ", and a group must be whole to have a mean. " +
                     "per_device_train_batch_size = " + fit + " works (processes \u00d7 batch \u00d7 steps per " +
                     "generation = " + P + " \u00d7 " + fit + " \u00d7 " + S + " = " + fit * P * S + ")."};
    }
    var every = S * I;  // micro-steps between two generations (GRPOTrainer's generate_every)
    var out = {
      ok: true, error: null,
      generation_batch_size: gbs,
      steps_per_generation: S,
      prompts_per_generation: gbs / G,
      completions_per_step: b * P * A,
      prompts_per_step: b * P * A / G,
      micro_steps_per_generation: every,
      optimizer_steps_per_generation: every / A,
      per_device_generation_batch: b * S,  // completions one process generates at once
      off_policy: A % every !== 0,  // GRPOTrainer computes old log-probs exactly then
      max_staleness: maxStaleness(A, every)
    };
    var N = inp.dataset_prompts;
    if (N != null && isCount(N)) {
      // RepeatSampler: whole generation batches of prompts, each G times, repeated S·I times;
      // the dataloader yields b·S per process; Trainer: ceil(len / accumulation), at least 1.
      var perGen = gbs / G, used = Math.floor(N / perGen) * perGen;
      var micro = used * G * every / (b * S * P);
      out.prompts_used_per_epoch = used;
      out.optimizer_steps_per_epoch = used === 0 ? 0 : Math.max(Math.ceil(micro / A), 1);
    }
    return out;
  }

  function fmt(v) {
    if (Math.floor(v) === v) { return String(v); }
    return v.toFixed(3).replace(/0+$/, "");
  }

  function describe(r, inp) {
    if (!r.ok) { return null; }
    var S = r.steps_per_generation, A = inp.grad_accum;
    var I = inp.num_iterations == null ? 1 : inp.num_iterations;
    var rows = [
      ["completions-per-generation", "completions per generation batch (generation_batch_size)",
       fmt(r.generation_batch_size) + " = " + inp.processes + " \u00d7 " + inp.per_device_batch + " \u00d7 " + S],
      ["prompts-per-generation", "prompts per generation batch", fmt(r.prompts_per_generation) +
       " = " + r.generation_batch_size + " / G"],
      ["completions-per-step", "completions per optimizer step", fmt(r.completions_per_step) +
       " = " + inp.processes + " \u00d7 " + inp.per_device_batch + " \u00d7 " + A],
      ["prompts-per-step", "prompts per optimizer step", fmt(r.prompts_per_step) +
       (Math.floor(r.prompts_per_step) === r.prompts_per_step ? "" : " (groups straddle optimizer steps)")],
      ["steps-per-generation", "optimizer steps per generation batch", fmt(r.optimizer_steps_per_generation) +
       " = " + S + " \u00d7 " + I + " / " + A +
       (r.optimizer_steps_per_generation < 1 ? " (" + fmt(1 / r.optimizer_steps_per_generation) +
        " generations per optimizer step)" : "")],
      ["off-policy", "off-policy?", r.off_policy ?
       "yes: samples are up to " + r.max_staleness + " optimizer step" + (r.max_staleness === 1 ? "" : "s") +
       " old; TRL computes old log-probs, and the clip (epsilon) limits the update" :
       "no: every update uses samples of the current policy (the ratio is 1; the clip never binds)"],
      ["generation-memory", "completions one process generates at once", fmt(r.per_device_generation_batch) +
       " = per-device batch \u00d7 steps per generation (accumulation does not shrink it)"]
    ];
    if (r.optimizer_steps_per_epoch != null) {
      rows.push(["steps-per-epoch", "optimizer steps per epoch", fmt(r.optimizer_steps_per_epoch) +
                 " (" + r.prompts_used_per_epoch + " prompts \u00d7 G = " + inp.G + " \u00d7 " + I + " / " +
                 r.completions_per_step + " completions per step)"]);
    }
    return rows;
  }

  var api = {FIELDS: FIELDS, trlBatch: trlBatch, maxStaleness: maxStaleness, describe: describe};
  if (typeof module !== "undefined" && module.exports) { module.exports = api; }
  if (typeof document === "undefined") { return; }
  root.grpolabBatch = api;

  // ------------------------------------------------------------------------------------
  // The page: one form per <div class="grpolab-batch">
  // ------------------------------------------------------------------------------------
  function h(tag, cls, parent, text) {
    var el = document.createElement(tag);
    if (cls) { el.className = cls; }
    if (text != null) { el.textContent = text; }
    if (parent) { parent.appendChild(el); }
    return el;
  }

  function Calculator(rootEl, index) {
    var self = this;
    this.inputs = {};
    var form = h("form", "grpolab-batch-form", rootEl);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    FIELDS.forEach(function (f) {
      var id = "grpolab-batch-" + index + "-" + f[0];
      var row = h("div", "grpolab-batch-field", form);
      var label = h("label", null, row, f[2]);
      label.setAttribute("for", id);
      h("code", null, label, f[1]);
      var input = h("input", null, row);
      input.type = "number"; input.min = String(f[4]); input.step = "1"; input.id = id;
      input.setAttribute("data-field", f[0]);
      input.inputMode = "numeric";
      if (f[3] == null) { input.placeholder = "= accum."; } else { input.value = String(f[3]); }
      input.addEventListener("input", function () { self.update(); });
      self.inputs[f[0]] = input;
    });
    this.error = h("p", "grpolab-batch-error", rootEl);
    this.error.setAttribute("data-role", "error");
    this.error.setAttribute("role", "alert");
    this.table = h("table", "grpolab-batch-readouts", rootEl);
    this.config = h("pre", "grpolab-batch-config", rootEl);
    this.config.setAttribute("data-role", "config");
    this.update();
  }

  Calculator.prototype.values = function () {
    var v = {};
    for (var k in this.inputs) {
      var raw = this.inputs[k].value.trim();
      v[k] = raw === "" ? null : Number(raw);
    }
    return v;
  };

  Calculator.prototype.update = function () {
    var inp = this.values(), r = trlBatch(inp);
    this.table.textContent = "";
    this.error.textContent = r.ok ? "" : r.error;
    this.config.textContent = "";
    if (!r.ok) { return; }
    var tbody = h("tbody", null, this.table);
    describe(r, inp).forEach(function (row) {
      var tr = h("tr", null, tbody);
      h("th", null, tr, row[1]);
      h("td", null, tr, row[2]).setAttribute("data-role", row[0]);
    });
    this.config.textContent = "GRPOConfig(\n" +
      "    per_device_train_batch_size=" + inp.per_device_batch + ",\n" +
      "    gradient_accumulation_steps=" + inp.grad_accum + ",\n" +
      "    num_generations=" + inp.G + ",\n" +
      (inp.steps_per_generation == null ? "" : "    steps_per_generation=" + inp.steps_per_generation + ",\n") +
      "    num_iterations=" + (inp.num_iterations == null ? 1 : inp.num_iterations) + ",\n" +
      ")  # accelerate launch --num_processes " + inp.processes;
  };

  function mountAll() {
    var roots = document.querySelectorAll(".grpolab-batch:not([data-mounted])");
    for (var i = 0; i < roots.length; i++) {
      roots[i].setAttribute("data-mounted", "1");
      roots[i].textContent = "";
      roots[i].grpolabBatch = new Calculator(roots[i], i);
    }
  }
  api.mountAll = mountAll;
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", mountAll); }
  else { mountAll(); }
})(typeof window !== "undefined" ? window : this);
