"""A character-level tokenizer that is a real Hugging Face tokenizer.

One character = one token, so a tiny model's vocabulary has a few dozen entries and a
3-digit sum is a handful of decode steps. It subclasses ``PreTrainedTokenizer``, so
``save_pretrained`` / ``from_pretrained``, padding, ``batch_decode`` and chat-free
pipelines work as for any HF tokenizer.
"""

from __future__ import annotations

import json
import os
import string

from transformers import PreTrainedTokenizer

from grpolab._files import CorruptFileError, Field, read_json

__all__ = ["CharTokenizer", "DEFAULT_CHARS", "MAX_VOCAB"]

# Digits and operators first (the arithmetic tasks), then enough text for word problems.
DEFAULT_CHARS = (string.digits + "+-*/=()., ?!:;'$%" + string.ascii_lowercase
                 + string.ascii_uppercase)
VOCAB_FILE = "vocab.json"
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
#: Most entries of a character vocabulary (every Unicode plane-0 character, and more than
#: a character model ever needs); a vocabulary file is read only up to this size.
MAX_VOCAB = 65536


def read_vocabulary(path) -> dict[str, int]:
    """A ``vocab.json`` of a CharTokenizer: an object of token -> id (ids below
    :data:`MAX_VOCAB`, each once), the four special tokens among the tokens (a
    CorruptFileError naming the file)."""
    what = "a character vocabulary (the vocab.json of a CharTokenizer)"
    fix = (f"delete the folder {os.path.dirname(os.fspath(path)) or '.'} and rerun the "
           "command that wrote it")
    vocab = read_json(path, what, max_bytes=16 * 2**20, remedy=fix, schema=Field(
        "map", items=Field("int", 0, MAX_VOCAB - 1), max_items=MAX_VOCAB))
    missing = [t for t in SPECIALS if t not in vocab]
    if missing:
        raise CorruptFileError(path, f"has no {missing[0]!r} token, so it is not {what}", fix)
    if len(set(vocab.values())) != len(vocab):  # gaps are fine (decoded as <unk>)
        raise CorruptFileError(path, f"gives two tokens the same id, so it is not {what}", fix)
    return vocab


class CharTokenizer(PreTrainedTokenizer):
    """Character-level tokenizer: special tokens ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``,
    then one id per character of ``chars`` (unknown characters map to ``<unk>``).

    Padding is on the left by default, so that a batch of prompts ends at the same
    position and generation continues from there.
    """

    vocab_files_names = {"vocab_file": VOCAB_FILE}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file: str | None = None, chars: str = DEFAULT_CHARS, **kwargs):
        if vocab_file is not None:
            self._vocab: dict[str, int] = read_vocabulary(vocab_file)
        else:
            uniq = list(dict.fromkeys(chars))
            self._vocab = {tok: i for i, tok in enumerate([*SPECIALS, *uniq])}
        self._inverse = {i: t for t, i in self._vocab.items()}
        kwargs.setdefault("pad_token", "<pad>")
        kwargs.setdefault("bos_token", "<bos>")
        kwargs.setdefault("eos_token", "<eos>")
        kwargs.setdefault("unk_token", "<unk>")
        kwargs.setdefault("padding_side", "left")
        super().__init__(**kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _tokenize(self, text: str, **kwargs) -> list[str]:
        return list(text)

    def _convert_token_to_id(self, token: str) -> int:
        return self._vocab.get(token, self._vocab["<unk>"])

    def _convert_id_to_token(self, index: int) -> str:
        return self._inverse.get(int(index), "<unk>")

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return "".join(tokens)

    # -- fast paths: the sampler encodes prompts and decodes completions every step, and
    # PreTrainedTokenizer's per-sequence Python work (special-token sets rebuilt per
    # sequence, per-text encode_plus) was ~1 ms of a ~10 ms tiny-model rollout
    # (benchmarks/RESULTS.md). Both give exactly the generic path's output
    # (tests/test_models.py) and fall back to it whenever anything is non-default.

    def _plain(self) -> bool:
        """True when every added token is a vocabulary entry (no tokens added after
        construction), so ids map to strings through the vocabulary alone."""
        return all(self._inverse.get(i) == tok.content
                   for i, tok in self._added_tokens_decoder.items())

    def encode_left_padded(self, texts: list[str]):
        """``(input_ids, attention_mask)`` as ``LongTensor``s, left-padded to the longest
        text: the same tensors as ``self(texts, padding=True, padding_side="left",
        return_tensors="pt")``, for the sampler's hot path."""
        import torch

        if not self._plain() or not texts:
            enc = self(list(texts), padding=True, padding_side="left", return_tensors="pt")
            return enc["input_ids"], enc["attention_mask"]
        unk, pad = self._vocab["<unk>"], self.pad_token_id
        vocab = self._vocab
        rows = [[vocab.get(c, unk) for c in text] for text in texts]
        width = max(len(r) for r in rows)
        ids = [[pad] * (width - len(r)) + r for r in rows]
        mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
        return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)

    def batch_decode(self, sequences, skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: bool | None = None, **kwargs) -> list[str]:
        """``PreTrainedTokenizer.batch_decode`` with one lookup table per call instead of
        per-sequence special-token sets; the same strings (ids outside the vocabulary
        decode to ``<unk>``, as there)."""
        rows = sequences.tolist() if hasattr(sequences, "tolist") else sequences
        if (kwargs or not self._plain() or not isinstance(rows, (list, tuple)) or not rows
                or not all(isinstance(r, (list, tuple)) for r in rows)):
            return super().batch_decode(sequences, skip_special_tokens=skip_special_tokens,
                                        clean_up_tokenization_spaces=clean_up_tokenization_spaces,
                                        **kwargs)
        table = [self._inverse.get(i, "<unk>") for i in range(max(self._inverse) + 1)]
        if skip_special_tokens:
            for i in self.all_special_ids:
                table[i] = ""
        n = len(table)
        texts = ["".join(table[i] if 0 <= i < n else "<unk>" for i in map(int, row))
                 for row in rows]
        clean = (self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None
                 else clean_up_tokenization_spaces)
        return [self.clean_up_tokenization(s) for s in texts] if clean else texts

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None):
        path = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "")
                            + VOCAB_FILE)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self._vocab, f, ensure_ascii=False)
        return (path,)
