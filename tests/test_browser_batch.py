"""The TRL batch calculator on the practitioner page, in headless chromium, offline.

The reader types settings and reads TRL's sizes: the readouts equal what ``trl.GRPOConfig``
derives for the same inputs; a batch that cannot hold whole groups of G shows TRL's refusal
and no readouts; an off-policy setting says so. Its text keeps a 4.5:1 contrast in both
themes, and at 390 px it fits the screen. Skipped only when chromium or playwright is
missing and CI is not "true".
"""

from __future__ import annotations

import pytest

from test_browser_reader import CONTRAST_JS, _contrast_failures

pytestmark = [pytest.mark.slow, pytest.mark.book, pytest.mark.browser]

PAGE = "capstone/02-choose-g-for-your-run"


def _open(offline_page, theme: str = "light", width: int = 1280):
    tab = offline_page(PAGE, math=False, color_scheme=theme,
                       viewport={"width": width, "height": 900})
    tab.page.wait_for_selector(".grpolab-batch[data-mounted] [data-role=completions-per-step]",
                               timeout=30_000)
    return tab


def _set(page, **values) -> None:
    for field, value in values.items():
        page.locator(f".grpolab-batch input[data-field={field}]").fill(str(value))


def _read(page, role: str) -> str:
    return page.locator(f".grpolab-batch [data-role={role}]").inner_text()


def _trl(tmp_path, **kwargs):
    import trl

    return trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[],
                          **kwargs)


def test_the_readouts_are_trls_sizes(offline_page, tmp_path):
    tab = _open(offline_page)
    page = tab.page
    # the user test's run: 1 GPU, 16 completions per device, accumulation 8, G = 8
    _set(page, processes=1, per_device_batch=16, grad_accum=8, G=8, steps_per_generation="",
         num_iterations=1)
    trl = _trl(tmp_path, per_device_train_batch_size=16, gradient_accumulation_steps=8,
               num_generations=8)
    assert _read(page, "completions-per-generation").split()[0] == str(trl.generation_batch_size)
    assert _read(page, "completions-per-step").split()[0] == "128"
    assert _read(page, "prompts-per-step").split()[0] == "16"
    assert _read(page, "steps-per-generation").split()[0] == "1"
    assert _read(page, "off-policy").startswith("no")
    assert "per_device_train_batch_size=16" in _read(page, "config")
    assert _read(page, "error") == ""

    # a batch that cannot hold a whole group: TRL's refusal, and no readouts
    _set(page, per_device_batch=3, grad_accum=1)
    with pytest.raises(ValueError) as refused:
        _trl(tmp_path, per_device_train_batch_size=3, gradient_accumulation_steps=1,
             num_generations=8)
    error = _read(page, "error")
    assert error.startswith(str(refused.value).rstrip(".")), (error, str(refused.value))
    assert page.locator(".grpolab-batch [data-role=completions-per-step]").count() == 0

    # four micro-steps per generation, two per optimizer step: the second is off-policy
    _set(page, per_device_batch=16, grad_accum=2, steps_per_generation=4)
    trl = _trl(tmp_path, per_device_train_batch_size=16, gradient_accumulation_steps=2,
               num_generations=8, steps_per_generation=4)
    assert _read(page, "completions-per-generation").split()[0] == str(trl.generation_batch_size)
    assert _read(page, "steps-per-generation").split()[0] == "2"
    assert _read(page, "off-policy").startswith("yes: samples are up to 1 optimizer step old")
    tab.assert_clean()


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_calculator_reads_well_in_both_themes_and_on_a_phone(offline_page, theme, width):
    tab = _open(offline_page, theme, width)
    page = tab.page
    _set(page, per_device_batch=3, grad_accum=1)  # the error line is measured too
    report = page.evaluate(CONTRAST_JS, ".grpolab-batch")
    _set(page, per_device_batch=16, grad_accum=2, steps_per_generation=4)
    report2 = page.evaluate(CONTRAST_JS, ".grpolab-batch")
    assert len(report["texts"]) + len(report2["texts"]) > 15, "no calculator text was measured"
    assert _contrast_failures(report) == [] and _contrast_failures(report2) == [], theme
    if theme == "dark":  # the calculator draws on the dark background, not a light box
        assert all(r["bgLum"] < 0.1 for r in report["roots"]), report["roots"]
    overflow = page.evaluate("""() => {
        const el = document.querySelector('.grpolab-batch');
        return [el.scrollWidth, el.clientWidth, document.documentElement.scrollWidth,
                window.innerWidth];
    }""")
    assert overflow[0] <= overflow[1] + 1, f"the calculator overflows its box: {overflow}"
    assert overflow[2] <= overflow[3] + 1, f"the page scrolls sideways: {overflow}"
    tab.assert_clean()
