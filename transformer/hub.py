"""Models from the Hugging Face Hub: `download_marian` fetches an opus-mt repo into the standard cache, and
`load_pretrained` loads a model by folder (ours or Marian's layout) or by Hub repo id.

Offline (no connection, or HF_HUB_OFFLINE=1) a model already in the cache is used; one that is not is a
CheckpointError that says so, never a traceback from the Hub client.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from .checkpoint import FORMAT, TWIN, Checkpoint, CheckpointError, load_checkpoint, read_json
from .marian import check_budget, config_from_marian, load_marian

# What a Marian model needs besides its weights (model.safetensors, else pytorch_model.bin).
MARIAN_FILES = ["config.json", "generation_config.json", "source.spm", "target.spm", "vocab.json", "target_vocab.json"]


def download_marian(repo_id: str, *, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """Fetch an opus-mt repo (e.g. "Helsinki-NLP/opus-mt-en-de") into the standard Hugging Face cache.

    Only the files a Marian model needs are downloaded: model.safetensors when the repo has it,
    pytorch_model.bin otherwise. Offline (or with HF_HUB_OFFLINE=1), a model already in the cache is used.
    Raises CheckpointError naming the repo and the cause.
    """
    from huggingface_hub import errors as hub_errors
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except hub_errors.HFValidationError as error:
        raise CheckpointError(f"{repo_id!r} is not a valid Hub repo id ({error})") from None

    try:
        try:  # config.json first: a model larger than this server takes is refused before its weights come
            config = Path(hf_hub_download(repo_id, "config.json", revision=revision, cache_dir=cache_dir))
        except hub_errors.EntryNotFoundError as error:
            if isinstance(error, hub_errors.LocalEntryNotFoundError):
                raise
            raise CheckpointError(f"{repo_id}: the repo has no config.json; it is not a Marian model") from None
        check_budget(config_from_marian(read_json(config), Path(repo_id)), repo_id)
        folder = Path(
            snapshot_download(
                repo_id,
                revision=revision,
                cache_dir=cache_dir,
                allow_patterns=MARIAN_FILES + ["model.safetensors"],
            )
        )
        if not (folder / "config.json").is_file():
            raise CheckpointError(f"{repo_id}: the repo has no config.json; it is not a Marian model")
        if not (folder / "model.safetensors").is_file():
            hf_hub_download(repo_id, "pytorch_model.bin", revision=revision, cache_dir=cache_dir)
    except CheckpointError:
        raise
    # (LocalEntryNotFoundError is a subclass of EntryNotFoundError: it must come first)
    except (hub_errors.LocalEntryNotFoundError, hub_errors.OfflineModeIsEnabled):
        raise CheckpointError(
            f"{repo_id}: cannot download it (no connection to the Hugging Face Hub, or HF_HUB_OFFLINE=1) "
            "and it is not in the local cache"
        ) from None
    except (hub_errors.RepositoryNotFoundError, hub_errors.GatedRepoError):
        raise CheckpointError(f"{repo_id}: no such model on the Hugging Face Hub (or it is private/gated)") from None
    except hub_errors.RevisionNotFoundError:
        raise CheckpointError(f"{repo_id}: revision {revision!r} not found") from None
    except hub_errors.EntryNotFoundError:
        raise CheckpointError(f"{repo_id}: the repo has no model weights; it is not a Marian model") from None
    except (hub_errors.HfHubHTTPError, OSError) as error:
        raise CheckpointError(f"{repo_id}: download failed ({type(error).__name__}: {error})") from None
    return folder


def load_pretrained(name: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load a model by folder (ours or Marian's layout) or by Hub repo id."""
    path = Path(name)
    if path.is_dir():  # ours (a checkpoint, or an untrained twin, which has no config.json), else Marian's
        ours = (path / TWIN).is_file() or read_json(path / "config.json").get("format") == FORMAT
        return load_checkpoint(path, device) if ours else load_marian(path, device)
    return load_hub_model(str(name), device)


def load_hub_model(
    repo_id: str, device: str | torch.device = "cpu", *, cache_dir: str | Path | None = None
) -> Checkpoint:
    """An opus-mt (Marian) model from the Hugging Face Hub, downloaded once into the cache (the standard one by
    default), named by its repo id."""
    try:
        checkpoint = load_marian(download_marian(repo_id, cache_dir=cache_dir), device)
    except CheckpointError as error:
        raise CheckpointError(without_paths(str(error), repo_id)) from None
    checkpoint.name = repo_id
    return checkpoint


# A path on this server, as a message of the Hub library, the file system or a loader may quote it.
SERVER_PATH = re.compile(r"(?<![\w.])(?:/[\w.@+-]+){2,}/?")


def without_paths(message: str, repo_id: str) -> str:
    """A message about the Hub model `repo_id` with the paths of this server taken out: the cache folder of the
    model is its repo id, any other path its last part. (A user sees where a model went wrong, not where this
    server keeps its files.)"""

    def named(found: re.Match) -> str:
        path = found.group()
        snapshot = re.search(r"/snapshots/[0-9a-f]+(/.*)?$", path)
        if snapshot:  # the Hub cache's folder of this model: its repo id, and the file in it
            return repo_id + (snapshot.group(1) or "")
        return Path(path).name or path

    return SERVER_PATH.sub(named, message)
