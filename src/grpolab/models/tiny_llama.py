"""Models: the embedded tiny causal LM, and a loader for any Hugging Face causal LM.

- :func:`tiny_config` / :func:`build_tiny_model` — a 2-layer Llama-style model (d_model 128,
  about 0.4M parameters) over the character vocabulary of
  :class:`grpolab.models.tokenizer.CharTokenizer`. It is SmolLM2's own architecture
  (``LlamaForCausalLM``: rotary positions, RMSNorm, SwiGLU, tied embeddings), shrunk. Built
  from a ``transformers`` config, so it saves and loads as safetensors like any hub model.

  Why rotary positions: attention then depends only on the *distance* between tokens, so a
  left-padded row computes the same function whether the caller passes position ids built
  from the attention mask (grpolab, ``generate``) or none (TRL's log-prob pass). With
  GPT-2's learned absolute positions the two disagree on every padded row.
- :func:`load_causal_lm` — model + tokenizer from a hub id or a local directory (ours or
  anyone's), optionally from a GGUF file, on the device you ask for (default: CUDA when
  present).

Loading cannot surprise: remote code is never run (``trust_remote_code=False``, so a model
folder that ships its own Python is refused in one line instead of transformers asking
"run the custom code?"), a pickled checkpoint that torch's weights-only loader refuses is
one line, and a hub id that is neither a local folder nor in the local Hugging Face cache
fails at once when the hub cannot be reached (no retries for a minute).
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import warnings

from grpolab.models.device import resolve_device

__all__ = ["tiny_config", "build_tiny_model", "load_causal_lm", "count_parameters"]


def tiny_config(vocab_size: int, *, n_layer: int = 2, n_embd: int = 128, n_head: int = 4,
                n_positions: int = 64, bos_token_id: int = 1, eos_token_id: int = 2,
                pad_token_id: int = 0):
    """The ``LlamaConfig`` of the embedded tiny model.

    ``n_layer``/``n_embd``/``n_head`` map onto ``num_hidden_layers``/``hidden_size``/
    ``num_attention_heads`` (``WarmStartConfig`` keeps the short names); ``n_positions`` is
    ``max_position_embeddings``. The MLP width is 8/3 of the hidden size rounded up to a
    multiple of 32 (Llama's SwiGLU convention, which keeps the parameter count of a 4× GELU
    MLP; SmolLM2-135M uses 1536 for 576). Dropout is off: RL wants a deterministic policy
    given the parameters, so old and new log-probabilities agree.
    """
    from transformers import LlamaConfig

    intermediate = -(-8 * n_embd // 3 // 32) * 32
    return LlamaConfig(
        vocab_size=vocab_size, hidden_size=n_embd, intermediate_size=intermediate,
        num_hidden_layers=n_layer, num_attention_heads=n_head, num_key_value_heads=n_head,
        max_position_embeddings=n_positions, rope_theta=10_000.0, rms_norm_eps=1e-5,
        hidden_act="silu", attention_bias=False, mlp_bias=False, attention_dropout=0.0,
        tie_word_embeddings=True, initializer_range=0.02,
        bos_token_id=bos_token_id, eos_token_id=eos_token_id, pad_token_id=pad_token_id,
    )


def build_tiny_model(tokenizer=None, *, seed: int = 0, **config_kwargs):
    """A freshly initialised tiny Llama-style model and its character tokenizer (seeded).

    Returns ``(model, tokenizer)``. ``config_kwargs`` override :func:`tiny_config`
    (``n_layer``, ``n_embd``, ``n_head``, ``n_positions``).
    """
    import torch
    from transformers import LlamaForCausalLM

    from grpolab.models.tokenizer import CharTokenizer

    tokenizer = tokenizer or CharTokenizer()
    config = tiny_config(len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, **config_kwargs)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def count_parameters(model) -> int:
    """Number of parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in model.parameters())


def _load_tokenizer(name_or_path: str, gguf_file: str | None, **kwargs):
    from transformers import AutoTokenizer

    from grpolab._files import CorruptFileError, read_text

    cfg = os.path.join(name_or_path, "tokenizer_config.json")
    if os.path.isfile(cfg):
        # bounded and regular, but not the strict JSON reader: transformers writes
        # model_max_length as a 31-digit integer; only tokenizer_class is read here
        text = read_text(cfg, "a tokenizer config", max_bytes=16 * 2**20, remedy="")
        try:
            settings = json.loads(text)
        except (ValueError, RecursionError):
            raise CorruptFileError(cfg, "is not valid JSON (or nests too deep), so not a "
                                   "tokenizer config", "") from None
        if isinstance(settings, dict) and settings.get("tokenizer_class") == "CharTokenizer":
            from grpolab.models.tokenizer import CharTokenizer

            return CharTokenizer.from_pretrained(name_or_path)
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    return AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=False, **kwargs)


def _hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub can be reached now: False under ``HF_HUB_OFFLINE``, or
    when a TCP connection to its endpoint fails within ``timeout`` seconds (no network,
    no DNS). Through a proxy (``HTTPS_PROXY``, ``ALL_PROXY``, ... unless ``NO_PROXY``
    exempts the hub) the connection tried is the one to the proxy: a proxy variable alone
    must not make an unreachable hub look reachable (an unknown hub id then took 49 s of
    retries instead of failing at once from the local cache)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    from urllib.parse import urlparse
    from urllib.request import getproxies_environment, proxy_bypass_environment

    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    proxies = getproxies_environment()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    try:
        if proxy and not proxy_bypass_environment(host or "", proxies):
            p = urlparse(proxy if "://" in proxy else f"http://{proxy}")
            default = {"https": 443, "http": 80}.get(p.scheme, 1080)  # socks*: 1080
            host, port = p.hostname, p.port or default
        if not host:
            return False
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except (OSError, UnicodeError, ValueError):
        return False


def _load_error(name_or_path: str, exc: BaseException, offline: bool) -> Exception:
    """One line for every way loading a checkpoint can fail."""
    text = " ".join(str(exc).split())
    if "trust_remote_code" in text:
        return ValueError(f"{name_or_path} needs remote code (Python files shipped with the "
                          "model), which grpolab never runs (trust_remote_code=False); use a "
                          "model that transformers supports natively")
    if isinstance(exc, pickle.UnpicklingError) or "weights_only" in text:
        return ValueError(f"{name_or_path}: its pickled checkpoint (.bin) holds objects that "
                          "torch's weights-only loader refuses (it could run code); use a "
                          "safetensors checkpoint")
    if os.path.isdir(name_or_path):
        where = f"directory {name_or_path!r}"
    elif name_or_path.startswith((".", "~", os.sep)) or name_or_path.count("/") > 1:
        return FileNotFoundError(f"could not load a causal LM: there is no folder "
                                 f"{name_or_path!r} (and it is not a hub id)")
    elif offline:
        return FileNotFoundError(
            f"could not load a causal LM from hub id {name_or_path!r}: it is neither a local "
            "folder nor in the local Hugging Face cache, and the hub cannot be reached "
            "(offline); download it where there is a network, or pass a local folder")
    else:
        where = f"hub id (no network or cache?) {name_or_path!r}"
    return FileNotFoundError(f"could not load a causal LM from {where}: {text}"[:400])


def load_causal_lm(name_or_path: str, *, gguf_file: str | None = None, device=None, dtype=None):
    """Load any causal LM and its tokenizer by hub id or local path.

    Args:
        name_or_path: a hub id (needs network or a populated HF cache) or a directory
            written by ``save_pretrained`` (grpolab's tiny model included).
        gguf_file: file name of a GGUF checkpoint inside ``name_or_path`` (transformers
            dequantises it; needs the ``gguf`` package).
        device: ``"cpu"``, ``"cuda"``, a ``torch.device``, or ``None``/``"auto"`` for CUDA
            when available.
        dtype: a torch dtype or its name (``"float32"``, ``"bfloat16"``); default float32.

    Returns:
        ``(model, tokenizer)``, the model in eval mode on ``device``. The tokenizer has a
        pad token (EOS when the checkpoint has none).

    Raises:
        FileNotFoundError: nothing loadable at ``name_or_path`` (the message says why).
    """
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from grpolab._files import CorruptFileError

    hf_logging.disable_progress_bar()  # one bar per loaded shard is noise in a sweep
    if not isinstance(name_or_path, str | os.PathLike) or not str(name_or_path):
        raise ValueError(f"name_or_path must be a hub id or a directory, got {name_or_path!r}")
    name_or_path = str(name_or_path)
    if isinstance(dtype, str):
        if not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ValueError(f"dtype must be a torch dtype name such as 'float32', got {dtype!r}")
        dtype = getattr(torch, dtype)
    if gguf_file and os.path.isdir(name_or_path) and not os.path.isfile(
            os.path.join(name_or_path, gguf_file)):
        raise FileNotFoundError(f"no GGUF file {gguf_file!r} in {name_or_path}")
    # a hub id while the hub is unreachable: the local cache only, so a miss fails at once
    offline = not os.path.isdir(name_or_path) and not _hub_reachable()
    kwargs = {"local_files_only": True} if offline else {}
    try:
        with warnings.catch_warnings():  # torch's pickle-protocol warning precedes a refusal
            warnings.filterwarnings("ignore", message=".*pickle protocol", category=UserWarning)
            tokenizer = _load_tokenizer(name_or_path, gguf_file, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(
                name_or_path, dtype=dtype or torch.float32, trust_remote_code=False,
                **({"gguf_file": gguf_file} if gguf_file else {}), **kwargs)
    except CorruptFileError:  # grpolab's own files (tokenizer config, vocabulary), named
        raise
    except (OSError, ValueError, pickle.UnpicklingError, RuntimeError) as exc:
        raise _load_error(name_or_path, exc, offline) from exc
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(resolve_device(device)).eval()
    return model, tokenizer
