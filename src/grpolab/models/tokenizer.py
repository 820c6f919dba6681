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

__all__ = ["CharTokenizer", "DEFAULT_CHARS"]

# Digits and operators first (the arithmetic tasks), then enough text for word problems.
DEFAULT_CHARS = (string.digits + "+-*/=()., ?!:;'$%" + string.ascii_lowercase
                 + string.ascii_uppercase)
VOCAB_FILE = "vocab.json"


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
            with open(vocab_file, encoding="utf-8") as f:
                self._vocab: dict[str, int] = json.load(f)
        else:
            specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
            uniq = list(dict.fromkeys(chars))
            self._vocab = {tok: i for i, tok in enumerate(specials + uniq)}
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

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None):
        path = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "")
                            + VOCAB_FILE)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self._vocab, f, ensure_ascii=False)
        return (path,)
