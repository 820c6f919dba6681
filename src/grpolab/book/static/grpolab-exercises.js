/* grpolab answer boxes: check an exercise's answer in the page, with no kernel and no network.
 *
 * The data is generated from the exercise registry (grpolab.drill.exercises.checker_data)
 * when the book is built: the exercises page's hidden cell emits it as
 * <script type="application/json" id="grpolab-exercise-data">. This file repeats the
 * Python checkers line by line: grpolab.drill.quiz.parse_answer for "0.25", "25%", "1/4";
 * NumericChecker (tolerance, named mistakes, hint) and ChoiceChecker (letters). A verdict
 * reads as the notebook's CheckResult does: "✓ Right." or "✗ Not yet." and the message.
 *
 * Usable without a page too (node): module.exports = {parseAnswer, check, formatG}.
 */
(function (root) {
  "use strict";

  /* Python's repr() of a str, for the common cases (quotes and backslashes). */
  function pyRepr(s) {
    var q = s.indexOf("'") >= 0 && s.indexOf('"') < 0 ? '"' : "'";
    var body = s.replace(/\\/g, "\\\\");
    if (q === "'") { body = body.replace(/'/g, "\\'"); }
    return q + body.replace(/\n/g, "\\n").replace(/\t/g, "\\t") + q;
  }

  /* Python's format(x, "g") / format(x, ".Ng"). */
  function formatG(x, precision) {
    var p = precision === undefined ? 6 : Math.max(precision, 1);
    if (x === 0) { return 1 / x < 0 ? "-0" : "0"; }
    if (!isFinite(x)) { return isNaN(x) ? "nan" : (x > 0 ? "inf" : "-inf"); }
    var exp = Number(x.toExponential(p - 1).split("e")[1]);
    var out;
    if (exp >= -4 && exp < p) {
      out = x.toFixed(p - 1 - exp);
      if (out.indexOf(".") >= 0) { out = out.replace(/0+$/, "").replace(/\.$/, ""); }
      return out;
    }
    var parts = x.toExponential(p - 1).split("e");
    var mant = parts[0];
    if (mant.indexOf(".") >= 0) { mant = mant.replace(/0+$/, "").replace(/\.$/, ""); }
    var e = Number(parts[1]);
    var digits = String(Math.abs(e));
    if (digits.length < 2) { digits = "0" + digits; }
    return mant + "e" + (e < 0 ? "-" : "+") + digits;
  }

  var DIGITS = "\\d+(?:_\\d+)*";
  var FLOAT = new RegExp("^[+-]?(?:" + DIGITS + "(?:\\.(?:" + DIGITS + ")?)?|\\." + DIGITS +
                         ")(?:[eE][+-]?" + DIGITS + ")?$");
  var FRACTION = new RegExp("^([+-]?" + DIGITS + ")/(" + DIGITS + ")$");
  var NONFINITE = /^[+-]?(?:inf|infinity|nan)$/i;

  /* A comma may only group thousands ("10,055", "1,024.5"): anything else ("0,2482", a
   * decimal comma; "1,2,3") would lose its comma and read as another number. */
  var THOUSANDS = /^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?%?$/;

  function checkCommas(typed) {
    var s = typed.replace(/ /g, "");
    if (s.indexOf(",") < 0) { return; }
    var parts = s.split("/");
    for (var i = 0; i < parts.length; i++) {
      if (parts[i].indexOf(",") >= 0 && !THOUSANDS.test(parts[i])) {
        var one = (s.match(/,/g) || []).length === 1;
        throw new Error("not a number: " + pyRepr(typed) + " (a comma only separates thousands, as in " +
                        "10,055; for a decimal write a point" + (one ? ": " + typed.replace(",", ".") : "") + ")");
      }
    }
  }

  /* grpolab.drill.quiz.parse_answer; throws Error(message) as Python raises ValueError.
   * Stricter on one point: a comma that does not group thousands is refused with a hint. */
  function parseAnswer(text) {
    var typed = String(text).trim();
    checkCommas(typed);
    var s = typed.replace(/,/g, "").replace(/ /g, "");
    if (!s) { throw new Error("empty answer"); }
    var scale = 1.0;
    if (s.charAt(s.length - 1) === "%") { s = s.slice(0, -1); scale = 0.01; }
    var bad = "not a number: " + pyRepr(typed) + " (type e.g. 0.25, 25% or 1/4)";
    var value;
    if (s.indexOf("/") >= 0) {
      var m = FRACTION.exec(s);
      if (!m) { throw new Error(bad); }
      var num = Number(m[1].replace(/_/g, "")), den = Number(m[2].replace(/_/g, ""));
      if (den === 0) { throw new Error(bad); }
      value = num / den;
    } else if (NONFINITE.test(s)) {
      throw new Error("not a finite number: " + pyRepr(typed));
    } else if (FLOAT.test(s)) {
      value = Number(s.replace(/_/g, ""));
    } else {
      throw new Error(bad);
    }
    if (!isFinite(value)) { throw new Error("not a finite number: " + pyRepr(typed)); }
    return value * scale;
  }

  function checkNumeric(d, answer) {
    var x;
    try { x = parseAnswer(answer); } catch (err) { return [false, err.message + "."]; }
    if (Math.abs(x - d.reference) <= d.tolerance + 1e-12) { return [true, d.why]; }
    for (var i = 0; i < d.mistakes.length; i++) {
      var value = d.mistakes[i][0];
      if (Math.abs(x - value) <= Math.max(d.abs, d.rel * Math.abs(value)) + 1e-12) {
        return [false, d.mistakes[i][1]];
      }
    }
    return [false, formatG(x) + " is not within the tolerance (\u00b1" + formatG(d.tolerance, 2) +
            "). Hint: " + d.hint];
  }

  function checkChoice(d, answer) {
    var m = /^\(?([a-z])\)?(?:$|[\s.:)])/.exec(String(answer).trim().toLowerCase());
    var letter = m ? m[1] : "";
    if (!Object.prototype.hasOwnProperty.call(d.explanations, letter)) {
      return [false, "answer with one of the letters " +
              Object.keys(d.explanations).sort().join(", ") + "."];
    }
    return [letter === d.correct, d.explanations[letter]];
  }

  /* [correct, message] for one exercise's data and a typed answer. */
  function check(d, answer) {
    return d.kind === "numeric" ? checkNumeric(d, answer) : checkChoice(d, answer);
  }

  var api = {parseAnswer: parseAnswer, check: check, formatG: formatG};
  if (typeof module !== "undefined" && module.exports) { module.exports = api; }
  if (typeof document === "undefined") { return; }
  root.grpolabExercises = api;

  /* The page's checker data, parsed once. */
  function pageData() {
    if (!root.grpolabExerciseData) {
      var el = document.getElementById("grpolab-exercise-data");
      try {
        root.grpolabExerciseData = el ? JSON.parse(el.textContent) : {};
      } catch (err) {
        root.grpolabExerciseData = {};
      }
    }
    return root.grpolabExerciseData;
  }

  /* The box's accessible name is its exercise's title (the heading of its section), and its
   * description the question itself (the paragraph above the box), not the exercise's id. */
  function nameBox(form, input) {
    var section = form.closest("section");
    var heading = section ? section.querySelector("h1, h2, h3, h4") : null;
    if (!heading) { return; }
    var copy = heading.cloneNode(true);
    var links = copy.querySelectorAll(".headerlink");
    for (var i = 0; i < links.length; i++) { links[i].parentNode.removeChild(links[i]); }
    input.setAttribute("aria-label", "Answer to exercise " + copy.textContent.trim());
    var question = form.previousElementSibling;
    if (question && question.tagName.toLowerCase() === "p") {
      if (!question.id) { question.id = "grpolab-question-" + form.getAttribute("data-exercise"); }
      input.setAttribute("aria-describedby", question.id);
    }
  }

  function wire(form) {
    var verdict = form.querySelector(".grpolab-verdict");
    var input = form.querySelector("input[name=answer]");
    nameBox(form, input);
    var data = pageData()[form.getAttribute("data-exercise")];
    if (!data) {
      verdict.textContent = "No checker data for this exercise (rebuild the book).";
      form.setAttribute("data-error", "no data");
      return;
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var result = check(data, input.value);
      verdict.textContent = (result[0] ? "\u2713 Right. " : "\u2717 Not yet. ") + result[1];
      verdict.setAttribute("data-correct", result[0] ? "true" : "false");
    });
  }

  function init() {
    var forms = document.querySelectorAll("form.grpolab-answer");
    for (var i = 0; i < forms.length; i++) { wire(forms[i]); }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})(typeof window !== "undefined" ? window : this);
