"""The tiny model and tokenizer round-trip through save_pretrained/from_pretrained."""

import os

import pytest
import torch

from grpolab.models.tiny_llama import build_tiny_model, count_parameters, load_causal_lm
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


def test_rotary_positions_make_left_padding_invisible():
    """The tiny model is Llama-style (rotary positions), so a left-padded row gives the same
    logits on its real tokens whether position ids come from the attention mask (grpolab's
    sampler and loss, ``generate``) or are left out (TRL's log-prob pass), and the same as
    the unpadded row. GPT-2's learned absolute positions fail the first check."""
    model, tok = build_tiny_model(seed=0)
    model.eval()
    assert model.config.model_type == "llama" and model.config.tie_word_embeddings
    enc = tok(["7+8=", "123+456=", "12+9="], padding=True, return_tensors="pt")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    assert (mask == 0).any(), "the batch must be left-padded"
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        with_pos = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        without = model(input_ids=ids, attention_mask=mask).logits
        real = mask.bool()
        torch.testing.assert_close(with_pos[real], without[real], atol=1e-5, rtol=1e-4)
        for row in range(ids.shape[0]):
            alone = model(input_ids=ids[row, real[row]][None]).logits[0]
            torch.testing.assert_close(without[row, real[row]], alone, atol=1e-5, rtol=1e-4)


def test_char_tokenizer_fast_paths_equal_the_generic_ones():
    """The sampler's fast encode/decode give exactly what PreTrainedTokenizer gives: the
    same padded tensors, and the same strings for any ids (specials, ids outside the
    vocabulary, negative ids), with and without cleanup; a tokenizer with added tokens
    falls back to the generic path."""
    import random

    tok = CharTokenizer()
    texts = ["12+34=", "7+8=", "Tom has 3 apples . How many ?", "é~", ""]
    ids, mask = tok.encode_left_padded(texts)
    ref = tok(texts, padding=True, padding_side="left", return_tensors="pt")
    assert torch.equal(ids, ref["input_ids"]) and torch.equal(mask, ref["attention_mask"])
    rng = random.Random(0)
    for _ in range(200):
        rows = [[rng.randrange(-3, tok.vocab_size + 3) for _ in range(rng.randrange(0, 9))]
                for _ in range(rng.randrange(1, 5))]
        for skip in (True, False):
            for clean in (None, True, False):
                generic = super(CharTokenizer, tok).batch_decode(
                    rows, skip_special_tokens=skip, clean_up_tokenization_spaces=clean)
                assert tok.batch_decode(rows, skip_special_tokens=skip,
                                        clean_up_tokenization_spaces=clean) == generic
        tensor_rows = torch.tensor([r[:1] or [5] for r in rows])  # tensors decode the same
        assert tok.batch_decode(tensor_rows) == super(CharTokenizer, tok).batch_decode(
            tensor_rows)
    tok.add_tokens(["<think>"])
    assert not tok._plain()
    assert tok.batch_decode([[tok.vocab_size]]) == super(CharTokenizer, tok).batch_decode(
        [[tok.vocab_size]])
