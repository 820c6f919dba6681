"""The tiny model and tokenizer round-trip through save_pretrained/from_pretrained."""

import os

import pytest
import torch

from grpolab.models.tiny import build_tiny_model, count_parameters, load_causal_lm
from grpolab.models.tokenizer import CharTokenizer


def test_tokenizer_round_trip(tmp_path):
    tok = CharTokenizer()
    ids = tok("12+345=")["input_ids"]
    assert len(ids) == 7 and tok.decode(ids) == "12+345="
    batch = tok(["1+1=", "123+4="], padding=True)
    assert batch["input_ids"][0][:2] == [tok.pad_token_id] * 2  # left padding
    tok.save_pretrained(tmp_path)
    again = CharTokenizer.from_pretrained(tmp_path)
    assert again.get_vocab() == tok.get_vocab()
    assert again("12+345=")["input_ids"] == ids
    assert again.eos_token_id == tok.eos_token_id and again.padding_side == "left"


def test_tiny_model_is_small_and_round_trips_as_safetensors(tmp_path):
    model, tok = build_tiny_model(seed=0)
    assert 300_000 < count_parameters(model) < 600_000
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    assert os.path.isfile(tmp_path / "model.safetensors")
    loaded, tok2 = load_causal_lm(str(tmp_path), device="cpu")
    assert isinstance(tok2, CharTokenizer)
    x = torch.tensor([tok("12+3=")["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(model.eval()(x).logits, loaded(x).logits, atol=1e-6)


def test_seeded_builds_are_identical():
    a, _ = build_tiny_model(seed=1)
    b, _ = build_tiny_model(seed=1)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_load_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="could not load"):
        load_causal_lm(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="dtype"):
        load_causal_lm(str(tmp_path), dtype="float99")
